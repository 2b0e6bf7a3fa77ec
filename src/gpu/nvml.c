/* The NVML backend: libnvidia-ml.so.1 through dlopen (no NVIDIA header needed at
 * build time; see nvml_api.h), plus SMACT-like signals from DCGM (dcgm.h) or, on
 * Hopper and newer, NVML's GPM metrics.
 *
 * Symbols: the versioned names first, then the older ones (nvmlInit_v2 -> nvmlInit,
 * nvmlDeviceGetCount_v2 -> nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex_v2 -> ..,
 * nvmlDeviceGetComputeRunningProcesses_v3 -> _v2 -> the 16-byte v1,
 * nvmlDeviceGetMemoryInfo_v2 -> v1, nvmlDeviceGetPciInfo_v3 -> _v2 -> the unversioned
 * one with the older layout). Init, count, handle, UUID and memory are
 * required; everything else is optional and absent when missing.
 *
 * Answers: NOT_SUPPORTED, NO_PERMISSION and FUNCTION_NOT_FOUND for a signal mean
 * "this GPU has no such signal": it is marked absent and not asked again.
 * GPU_IS_LOST from any call marks the GPU lost for good (its samples say lost=1
 * with the last memory figures known, so the daemon drains it). Any other error
 * leaves that signal absent for that sample; for memory, the one signal placement
 * cannot do without, it fails the sample (-EIO, -ETIMEDOUT, ...). Every answer is
 * cleaned by answer.h before use: NVML is a vendor library and its answers are
 * untrusted input.
 *
 * GPUs NVML lists but cannot open (no handle, no UUID: hidden by a container's
 * cgroup, lost at start; a UUID an earlier GPU has) are skipped and counted in describe(). Islands
 * (GPUs linked by NVLink or behind PCIe switches) are worked out once, at open, from
 * nvmlDeviceGetP2PStatus and nvmlDeviceGetTopologyCommonAncestor (both optional);
 * a GPU lost later keeps its island. Not thread-safe,
 * except for the Xid events: asked for (xid_events), a thread of its own waits in
 * nvmlEventSetWait (NVML is thread-safe) and queues each critical Xid for xids(),
 * waking the caller's poll through an eventfd. */
#include "gpu/backend.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "gpu/answer.h"
#include "gpu/dcgm.h"
#include "gpu/nvml_api.h"
#include "util/thread.h"

/* snprintf that truncates on purpose (messages), without gcc's truncation warning. */
__attribute__((format(printf, 3, 4))) static void fmt_trunc(char *buf, size_t cap,
                                                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

#define NVML_PROC_BUF 1024 /* process records asked for per call */

/* Signals a GPU may lack; a set bit in nvml_gpu.absent means "do not ask again". */
enum {
    NV_UTIL = 1 << 0,
    NV_POWER = 1 << 1,
    NV_ENERGY = 1 << 2,
    NV_MEM_V2 = 1 << 3,
    NV_PROCS = 1 << 4,
    NV_MPS_PROCS = 1 << 5,
};

struct nvml_syms {
    nvml_init_fn init;
    nvml_shutdown_fn shutdown;
    nvml_error_string_fn error_string;
    nvml_driver_version_fn driver_version;
    nvml_count_fn count;
    nvml_handle_fn handle;
    nvml_string_fn name, uuid;
    nvml_pci_fn pci; /* _v3, _v2 (busId) or the unversioned one (busIdLegacy) */
    int pci_legacy;  /* pci is the unversioned one */
    nvml_memory_v2_fn mem_v2;
    nvml_memory_fn mem_v1;
    nvml_util_fn util;
    nvml_uint_fn power, power_limit;
    nvml_ull_fn energy;
    nvml_mig_mode_fn mig_mode;
    nvml_procs_fn procs;        /* _v3 or _v2 (24-byte records) */
    nvml_procs_v1_fn procs_v1;  /* 16-byte records */
    nvml_procs_fn mps_procs;    /* the MPS clients' list: _v3 or _v2 */
    nvml_procs_v1_fn mps_procs_v1;
    nvml_gpm_support_fn gpm_support;
    nvml_gpm_alloc_fn gpm_alloc;
    nvml_gpm_free_fn gpm_free;
    nvml_gpm_sample_get_fn gpm_sample_get;
    nvml_gpm_metrics_get_fn gpm_metrics_get;
    nvml_event_set_create_fn event_create;
    nvml_event_set_free_fn event_free;
    nvml_event_types_fn event_types;
    nvml_register_events_fn event_register;
    nvml_event_wait_fn event_wait; /* _v2, or the unversioned one */
    nvml_topology_fn topology;     /* islands (nvml_islands) */
    nvml_p2p_status_fn p2p_status;
    const char *init_name, *procs_name, *mem_name;
};

#define NVML_EVENT_WAIT_MS 250      /* one wait: how long close() waits for the thread */
#define NVML_EVENT_RETRY_MS 1000    /* after a wait that failed */
#define NVML_EVENT_REBUILD_MS 10000 /* between tries to build a set when no GPU was left */
#define NVML_EVENT_JOIN_S 3         /* close() gives up on a thread stuck in the driver */

/* The Xid event thread and its queue. */
struct nvml_events {
    nvmlEventSet_t set; /* the thread's alone once it runs; NULL: none for now */
    int fd;             /* eventfd: readable while the queue holds Xids; -1 none */
    pthread_t thread;
    int started;
    atomic_int stop;
    pthread_mutex_t lock; /* the queue and the counters below */
    struct carma_gpu_xid q[CARMA_GPU_XID_QUEUE];
    size_t head, len;
    uint64_t lost;          /* dropped on a full queue, since the last xids() */
    uint64_t wait_failures; /* waits that failed (not timed out), in a row */
    nvmlReturn_t wait_err;  /* the last of them */
    unsigned registered;    /* GPUs whose Xids come */
    unsigned rebuilds;      /* sets built again after a GPU was lost */
    char why[160];          /* why none come, or on which GPUs not */
};

struct nvml_gpu {
    nvmlDevice_t dev;
    struct carma_gpu_info info;
    unsigned absent;     /* NV_* bits */
    int lost;
    uint64_t last_used, last_free; /* reported while lost */
    int dcgm_k;          /* index in the DCGM helper, -1: none */
    int gpm_on;          /* GPM samples allocated */
    int gpm_have_prev;
    nvmlGpmSample_t gpm[2];
    unsigned gpm_cur;    /* gpm[gpm_cur] is the newest sample */
};

struct nvml_backend {
    void *dl;
    struct nvml_syms f;
    int inited;
    unsigned n, skipped;
    struct nvml_gpu *g;
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    char skip_why[96];
    struct carma_dcgm *dcgm;
    unsigned dcgm_matched;
    unsigned gpm_count;
    char prof_why[160];  /* why there is no DCGM, when there is none */
    nvmlProcessInfo_t *procbuf;      /* NVML_PROC_BUF records */
    size_t proc_dirty;               /* bytes of procbuf the last call may have written */
    nvmlGpmMetricsGet_t *gpm_req;    /* one request, reused */
    int want_xids;                   /* opts.xid_events */
    unsigned islands;                /* how many; 0: unknown (island_why says why) */
    char island_why[128];
    struct nvml_events ev;
};

static const char *nvml_errstr(const struct nvml_backend *nv, nvmlReturn_t r, char *buf,
                               size_t cap)
{
    const char *s = nv->f.error_string ? nv->f.error_string(r) : NULL;
    if (s)
        carma_gpu_answer_str(buf, cap, s, 80);
    else
        fmt_trunc(buf, cap, "NVML error %d", (int)r);
    return buf;
}

static int nvml_errno(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return 0;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return -ENOTSUP;
    case NVML_ERROR_NO_PERMISSION:
        return -EACCES;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_GPU_NOT_FOUND:
        return -ENODEV;
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return -EOVERFLOW;
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return -ENXIO;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return -EPROTO;
    case NVML_ERROR_TIMEOUT:
        return -ETIMEDOUT;
    case NVML_ERROR_MEMORY:
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return -ENOMEM;
    case NVML_ERROR_INVALID_ARGUMENT:
        return -EINVAL;
    default:
        return -EIO;
    }
}

/* "Not supported here": stop asking. */
static int nvml_is_absence(nvmlReturn_t r)
{
    return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION ||
           r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

/* The first of `names` (NULL-terminated) that the library exports. */
static void *nvml_sym(void *dl, const char *const *names, const char **which)
{
    for (; *names; names++) {
        void *p = dlsym(dl, *names);
        if (p) {
            if (which)
                *which = *names;
            return p;
        }
    }
    return NULL;
}

#define NVML_SYM(nv, field, ...)                                                                 \
    ((nv)->f.field = (__typeof__((nv)->f.field))nvml_sym((nv)->dl,                               \
                                                         (const char *const[]){__VA_ARGS__, NULL}, \
                                                         NULL))

static int nvml_resolve(struct nvml_backend *nv, const char *lib, struct carma_err *err)
{
    const char *const init_names[] = {"nvmlInit_v2", "nvmlInit", NULL};
    const char *const procs_names[] = {"nvmlDeviceGetComputeRunningProcesses_v3",
                                       "nvmlDeviceGetComputeRunningProcesses_v2", NULL};
    nv->f.init = (nvml_init_fn)nvml_sym(nv->dl, init_names, &nv->f.init_name);
    NVML_SYM(nv, shutdown, "nvmlShutdown");
    NVML_SYM(nv, error_string, "nvmlErrorString");
    NVML_SYM(nv, driver_version, "nvmlSystemGetDriverVersion");
    NVML_SYM(nv, count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    NVML_SYM(nv, handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    NVML_SYM(nv, name, "nvmlDeviceGetName");
    NVML_SYM(nv, uuid, "nvmlDeviceGetUUID");
    NVML_SYM(nv, pci, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
    if (!nv->f.pci) {
        NVML_SYM(nv, pci, "nvmlDeviceGetPciInfo");
        nv->f.pci_legacy = nv->f.pci != NULL;
    }
    NVML_SYM(nv, mem_v2, "nvmlDeviceGetMemoryInfo_v2");
    NVML_SYM(nv, mem_v1, "nvmlDeviceGetMemoryInfo");
    NVML_SYM(nv, util, "nvmlDeviceGetUtilizationRates");
    NVML_SYM(nv, power, "nvmlDeviceGetPowerUsage");
    NVML_SYM(nv, power_limit, "nvmlDeviceGetEnforcedPowerLimit",
             "nvmlDeviceGetPowerManagementLimit");
    NVML_SYM(nv, energy, "nvmlDeviceGetTotalEnergyConsumption");
    NVML_SYM(nv, mig_mode, "nvmlDeviceGetMigMode");
    nv->f.procs = (nvml_procs_fn)nvml_sym(nv->dl, procs_names, &nv->f.procs_name);
    if (!nv->f.procs) {
        NVML_SYM(nv, procs_v1, "nvmlDeviceGetComputeRunningProcesses");
        if (nv->f.procs_v1)
            nv->f.procs_name = "nvmlDeviceGetComputeRunningProcesses";
    }
    NVML_SYM(nv, mps_procs, "nvmlDeviceGetMPSComputeRunningProcesses_v3",
             "nvmlDeviceGetMPSComputeRunningProcesses_v2");
    if (!nv->f.mps_procs)
        NVML_SYM(nv, mps_procs_v1, "nvmlDeviceGetMPSComputeRunningProcesses");
    NVML_SYM(nv, gpm_support, "nvmlGpmQueryDeviceSupport");
    NVML_SYM(nv, gpm_alloc, "nvmlGpmSampleAlloc");
    NVML_SYM(nv, gpm_free, "nvmlGpmSampleFree");
    NVML_SYM(nv, gpm_sample_get, "nvmlGpmSampleGet");
    NVML_SYM(nv, gpm_metrics_get, "nvmlGpmMetricsGet");
    NVML_SYM(nv, event_create, "nvmlEventSetCreate");
    NVML_SYM(nv, event_free, "nvmlEventSetFree");
    NVML_SYM(nv, event_types, "nvmlDeviceGetSupportedEventTypes");
    NVML_SYM(nv, event_register, "nvmlDeviceRegisterEvents");
    NVML_SYM(nv, event_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    NVML_SYM(nv, topology, "nvmlDeviceGetTopologyCommonAncestor");
    NVML_SYM(nv, p2p_status, "nvmlDeviceGetP2PStatus");
    nv->f.mem_name = nv->f.mem_v2 ? "v2" : "v1";

    const char *missing = !nv->f.init     ? "nvmlInit_v2 (or nvmlInit)"
                          : !nv->f.count  ? "nvmlDeviceGetCount_v2 (or nvmlDeviceGetCount)"
                          : !nv->f.handle ? "nvmlDeviceGetHandleByIndex_v2 (or _ByIndex)"
                          : !nv->f.uuid   ? "nvmlDeviceGetUUID"
                          : (!nv->f.mem_v2 && !nv->f.mem_v1)
                              ? "nvmlDeviceGetMemoryInfo_v2 (or nvmlDeviceGetMemoryInfo)"
                              : NULL;
    if (missing)
        return carma_err_set(err, -ENOSYS, "%s: no symbol %s: not a usable NVML library", lib,
                             missing);
    return 0;
}

/* ---- GPM ---- */

static void nvml_gpm_free(struct nvml_backend *nv, struct nvml_gpu *g)
{
    for (int k = 0; k < 2; k++)
        if (g->gpm[k] && nv->f.gpm_free)
            nv->f.gpm_free(g->gpm[k]);
    g->gpm[0] = g->gpm[1] = NULL;
    g->gpm_on = 0;
    g->gpm_have_prev = 0;
}

/* Turns GPM on for g when the device supports it; takes the first sample. */
static void nvml_gpm_start(struct nvml_backend *nv, struct nvml_gpu *g)
{
    if (!nv->f.gpm_support || !nv->f.gpm_alloc || !nv->f.gpm_free || !nv->f.gpm_sample_get ||
        !nv->f.gpm_metrics_get)
        return;
    nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
    if (nv->f.gpm_support(g->dev, &sup) != NVML_SUCCESS || !sup.isSupportedDevice)
        return;
    if (!nv->gpm_req && !(nv->gpm_req = calloc(1, sizeof *nv->gpm_req)))
        return;
    if (nv->f.gpm_alloc(&g->gpm[0]) != NVML_SUCCESS ||
        nv->f.gpm_alloc(&g->gpm[1]) != NVML_SUCCESS || !g->gpm[0] || !g->gpm[1]) {
        nvml_gpm_free(nv, g);
        return;
    }
    g->gpm_on = 1;
    g->gpm_cur = 0;
    g->gpm_have_prev = nv->f.gpm_sample_get(g->dev, g->gpm[0]) == NVML_SUCCESS;
    nv->gpm_count++;
}

/* Metrics averaged since the previous sample. */
static void nvml_gpm_read(struct nvml_backend *nv, struct nvml_gpu *g,
                          struct carma_gpu_sample *out)
{
    unsigned next = g->gpm_cur ^ 1u;
    nvmlReturn_t r = nv->f.gpm_sample_get(g->dev, g->gpm[next]);
    if (r == NVML_ERROR_GPU_IS_LOST) {
        g->lost = 1;
        return;
    }
    if (r != NVML_SUCCESS) {
        g->gpm_have_prev = 0;
        return;
    }
    int have_prev = g->gpm_have_prev;
    g->gpm_cur = next;
    g->gpm_have_prev = 1;
    if (!have_prev)
        return;
    static const unsigned ids[] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                                   NVML_GPM_METRIC_DRAM_BW_UTIL, NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                   NVML_GPM_METRIC_GRAPHICS_UTIL};
    const unsigned nids = sizeof ids / sizeof ids[0];
    nvmlGpmMetricsGet_t *q = nv->gpm_req;
    q->version = NVML_GPM_METRICS_GET_VERSION;
    q->numMetrics = nids;
    q->sample1 = g->gpm[next ^ 1u];
    q->sample2 = g->gpm[next];
    for (unsigned k = 0; k < nids; k++) {
        memset(&q->metrics[k], 0, sizeof q->metrics[k]);
        q->metrics[k].metricId = ids[k];
    }
    if (nv->f.gpm_metrics_get(q) != NVML_SUCCESS)
        return;
    double *dst[] = {&out->smact, &out->smocc, &out->drama, &out->tensor, &out->gract};
    for (unsigned k = 0; k < nids; k++)
        if (q->metrics[k].nvmlReturn == NVML_SUCCESS && q->metrics[k].metricId == ids[k])
            *dst[k] = carma_gpu_answer_pct(q->metrics[k].value);
}

/* ---- islands ---- */

/* The root of i's set; halves the path on the way. */
static unsigned nvml_uf_find(unsigned *parent, unsigned i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* Whether GPUs i and j are linked: 1 (NVLink peer-to-peer, or a common ancestor no
 * further than PCIe switches), 0 (not, or a call said it cannot tell: NOT_SUPPORTED,
 * NO_PERMISSION, a GPU lost), -1 when every call there is failed otherwise (the
 * pair's link is unknown; r says the last failure). *said becomes 1 when a call
 * answered SUCCESS. Answers outside the known values link nothing. */
static int nvml_pair_linked(struct nvml_backend *nv, unsigned i, unsigned j, int *said,
                            nvmlReturn_t *r)
{
    nvmlDevice_t a = nv->g[i].dev, b = nv->g[j].dev;
    int answered = 0;
    *r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (nv->f.p2p_status) {
        nvmlGpuP2PStatus_t st = NVML_P2P_STATUS_NOT_SUPPORTED;
        nvmlReturn_t q = nv->f.p2p_status(a, b, NVML_P2P_CAPS_INDEX_NVLINK, &st);
        if (q == NVML_SUCCESS) {
            *said = 1;
            if (st == NVML_P2P_STATUS_OK)
                return 1;
        }
        if (q == NVML_SUCCESS || nvml_is_absence(q) || q == NVML_ERROR_GPU_IS_LOST)
            answered = 1;
        else
            *r = q;
    }
    if (nv->f.topology) {
        /* a value no known level has, should the library write none */
        nvmlGpuTopologyLevel_t lv = (nvmlGpuTopologyLevel_t)0x7fffffff;
        nvmlReturn_t q = nv->f.topology(a, b, &lv);
        if (q == NVML_SUCCESS) {
            *said = 1;
            switch (lv) {
            case NVML_TOPOLOGY_INTERNAL:
            case NVML_TOPOLOGY_SINGLE:
            case NVML_TOPOLOGY_MULTIPLE:
                return 1;
            default: /* a host bridge or further, or a value carma does not know */
                break;
            }
        }
        if (q == NVML_SUCCESS || nvml_is_absence(q) || q == NVML_ERROR_GPU_IS_LOST)
            answered = 1;
        else
            *r = q;
    }
    return answered ? 0 : -1;
}

/* Each GPU's island, once at open: the connected components of "linked" (above),
 * numbered in the order of their lowest GPU index. Unknown (-1 on every GPU, and
 * island_why says why) when the driver has neither call, when a pair's link is
 * unknown, or when no call answered SUCCESS. Pairs already in one island are not
 * asked: at most n(n-1)/2 pairs, two calls each. */
static void nvml_islands(struct nvml_backend *nv)
{
    for (unsigned i = 0; i < nv->n; i++)
        nv->g[i].info.island = -1;
    nv->islands = 0;
    if (!nv->f.topology && !nv->f.p2p_status) {
        fmt_trunc(nv->island_why, sizeof nv->island_why, "this NVML has no topology calls");
        return;
    }
    assert(nv->n <= CARMA_GPU_MAX);
    unsigned parent[CARMA_GPU_MAX];
    int label[CARMA_GPU_MAX];
    for (unsigned i = 0; i < nv->n; i++)
        parent[i] = i;
    int said = nv->n == 1; /* one GPU: nothing to link */
    for (unsigned i = 0; i < nv->n; i++)
        for (unsigned j = i + 1; j < nv->n; j++) {
            unsigned ri = nvml_uf_find(parent, i), rj = nvml_uf_find(parent, j);
            if (ri == rj)
                continue;
            nvmlReturn_t r;
            int l = nvml_pair_linked(nv, i, j, &said, &r);
            if (l < 0) {
                char eb[96];
                fmt_trunc(nv->island_why, sizeof nv->island_why, "GPUs %u and %u: %s", i, j,
                          nvml_errstr(nv, r, eb, sizeof eb));
                return;
            }
            if (l > 0)
                parent[ri > rj ? ri : rj] = ri < rj ? ri : rj;
        }
    if (!said) {
        fmt_trunc(nv->island_why, sizeof nv->island_why,
                  "the driver answered no topology call for any pair");
        return;
    }
    unsigned next = 0;
    for (unsigned i = 0; i < nv->n; i++)
        label[i] = -1;
    for (unsigned i = 0; i < nv->n; i++) {
        unsigned root = nvml_uf_find(parent, i);
        if (label[root] < 0)
            label[root] = (int)next++;
        nv->g[i].info.island = label[root];
    }
    nv->islands = next;
}

/* ---- Xid events ---- */

/* Sleeps ms, in steps that notice a stop. */
static void nvml_events_nap(struct nvml_events *ev, unsigned ms)
{
    for (unsigned t = 0; t < ms && !atomic_load(&ev->stop); t += 50) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* A new event set with every GPU that takes critical Xids registered; *registered gets
 * their count and why (cap bytes) what kept the others out. NULL when none could be.
 * NVML leaves a set undefined after a registration that answers UNKNOWN: it is freed and
 * built again without that GPU. */
static nvmlEventSet_t nvml_events_build(struct nvml_backend *nv, unsigned *registered, char *why,
                                        size_t cap)
{
    uint64_t skip[(CARMA_GPU_MAX + 63) / 64] = {0};
    char eb[96];
    why[0] = '\0';
    *registered = 0;
    for (unsigned attempt = 0; attempt <= nv->n; attempt++) {
        nvmlEventSet_t set = NULL;
        nvmlReturn_t r = nv->f.event_create(&set);
        if (r != NVML_SUCCESS || !set) {
            fmt_trunc(why, cap, "nvmlEventSetCreate: %s",
                      nvml_errstr(nv, r == NVML_SUCCESS ? NVML_ERROR_UNKNOWN : r, eb, sizeof eb));
            return NULL;
        }
        unsigned ok = 0, without = 0, again = 0;
        char first[120] = "";
        for (unsigned i = 0; i < nv->n && !again; i++) {
            unsigned long long types = 0;
            if (skip[i / 64] & (1ull << (i % 64))) {
                r = NVML_ERROR_UNKNOWN;
            } else if (nv->f.event_types &&
                       nv->f.event_types(nv->g[i].dev, &types) == NVML_SUCCESS &&
                       !(types & nvmlEventTypeXidCriticalError)) {
                r = NVML_ERROR_NOT_SUPPORTED;
            } else {
                r = nv->f.event_register(nv->g[i].dev, nvmlEventTypeXidCriticalError, set);
                if (r == NVML_SUCCESS) {
                    ok++;
                    continue;
                }
                if (r == NVML_ERROR_UNKNOWN) { /* the set is undefined now */
                    skip[i / 64] |= 1ull << (i % 64);
                    again = 1;
                    continue;
                }
            }
            if (!without++)
                fmt_trunc(first, sizeof first, "GPU %u: %s", i, nvml_errstr(nv, r, eb, sizeof eb));
        }
        if (again) {
            nv->f.event_free(set);
            continue;
        }
        if (without)
            fmt_trunc(why, cap, "none from %u GPU%s (%s)", without, without == 1 ? "" : "s", first);
        *registered = ok;
        if (ok)
            return set;
        nv->f.event_free(set);
        if (!without)
            fmt_trunc(why, cap, "no GPU");
        return NULL;
    }
    return NULL;
}

/* Queues one Xid (under ev->lock): the same Xid of the same GPU (and instance) still
 * waiting is counted again rather than queued, so a storm of one kind takes one entry
 * and cannot push another kind out; what a full queue cannot take is counted as lost. */
static void nvml_events_queue(struct nvml_events *ev, unsigned gi, uint64_t xid, uint32_t inst)
{
    for (size_t k = 0; k < ev->len; k++) {
        struct carma_gpu_xid *x = &ev->q[(ev->head + k) % CARMA_GPU_XID_QUEUE];
        if (x->gpu == gi && x->xid == xid && x->gpu_instance == inst) {
            if (x->count < UINT32_MAX)
                x->count++;
            return;
        }
    }
    if (ev->len == CARMA_GPU_XID_QUEUE) {
        ev->lost++;
        return;
    }
    struct carma_gpu_xid *x = &ev->q[(ev->head + ev->len) % CARMA_GPU_XID_QUEUE];
    x->gpu = gi;
    x->xid = xid;
    x->gpu_instance = inst;
    x->count = 1;
    ev->len++;
    uint64_t one = 1;
    if (write(ev->fd, &one, sizeof one) < 0) {
        /* EAGAIN only: the counter is full, so the descriptor is readable */
    }
}

/* Builds the set again (the thread only) and says so. */
static void nvml_events_rebuild(struct nvml_backend *nv)
{
    struct nvml_events *ev = &nv->ev;
    char why[sizeof ev->why];
    unsigned reg = 0;
    if (ev->set)
        nv->f.event_free(ev->set);
    nvmlEventSet_t set = nvml_events_build(nv, &reg, why, sizeof why);
    pthread_mutex_lock(&ev->lock);
    ev->set = set;
    ev->registered = reg;
    ev->rebuilds++;
    memcpy(ev->why, why, sizeof ev->why);
    pthread_mutex_unlock(&ev->lock);
}

/* The thread: it alone uses the event set once started. */
static void *nvml_events_run(void *arg)
{
    struct nvml_backend *nv = arg;
    struct nvml_events *ev = &nv->ev;
    while (!atomic_load(&ev->stop)) {
        if (!ev->set) { /* no GPU was left in the set: tried again now and then */
            nvml_events_nap(ev, NVML_EVENT_REBUILD_MS);
            if (!atomic_load(&ev->stop))
                nvml_events_rebuild(nv);
            continue;
        }
        nvmlEventData_t data;
        memset(&data, 0, sizeof data);
        data.gpuInstanceId = data.computeInstanceId = UINT32_MAX; /* what v1 leaves */
        struct timespec w0, w1;
        clock_gettime(CLOCK_MONOTONIC, &w0);
        nvmlReturn_t r = nv->f.event_wait(ev->set, &data, NVML_EVENT_WAIT_MS);
        clock_gettime(CLOCK_MONOTONIC, &w1);
        /* a wait that answers at once with nothing to queue (TIMEOUT before its time, an
         * event dropped below) would spin this loop: the rest of its time is slept */
        long waited_ms = (long)(w1.tv_sec - w0.tv_sec) * 1000 + (w1.tv_nsec - w0.tv_nsec) / 1000000;
        int early = waited_ms < NVML_EVENT_WAIT_MS / 2;
        if (r == NVML_ERROR_TIMEOUT) {
            if (early)
                nvml_events_nap(ev, NVML_EVENT_WAIT_MS);
            continue;
        }
        if (r != NVML_SUCCESS) {
            pthread_mutex_lock(&ev->lock);
            ev->wait_failures++;
            ev->wait_err = r;
            pthread_mutex_unlock(&ev->lock);
            nvml_events_nap(ev, NVML_EVENT_RETRY_MS); /* a lost GPU answers at once */
            /* a lost GPU in the set fails every wait, for every GPU: built again without
             * the GPUs that no longer register */
            if (!atomic_load(&ev->stop) && (r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_UNKNOWN))
                nvml_events_rebuild(nv);
            continue;
        }
        /* untrusted: only an Xid event of a GPU this backend opened */
        unsigned gi = 0;
        while (gi < nv->n && nv->g[gi].dev != data.device)
            gi++;
        int keep = gi < nv->n && (data.eventType & nvmlEventTypeXidCriticalError);
        pthread_mutex_lock(&ev->lock);
        ev->wait_failures = 0;
        if (keep)
            nvml_events_queue(ev, gi, data.eventData, data.gpuInstanceId);
        pthread_mutex_unlock(&ev->lock);
        if (!keep && early)
            nvml_events_nap(ev, NVML_EVENT_WAIT_MS);
    }
    return NULL;
}

/* Registers every GPU for critical Xids and starts the thread; without them (no event
 * API, nothing registered, no thread) ev.fd stays -1 and ev.why says why. */
static void nvml_events_start(struct nvml_backend *nv)
{
    struct nvml_events *ev = &nv->ev;
    if (!nv->f.event_create || !nv->f.event_free || !nv->f.event_register || !nv->f.event_wait) {
        fmt_trunc(ev->why, sizeof ev->why, "this NVML has no event API");
        return;
    }
    ev->set = nvml_events_build(nv, &ev->registered, ev->why, sizeof ev->why);
    if (!ev->set)
        return;
    ev->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ev->fd < 0) {
        fmt_trunc(ev->why, sizeof ev->why, "eventfd: %s", strerror(errno));
        goto none;
    }
    if (pthread_mutex_init(&ev->lock, NULL)) {
        fmt_trunc(ev->why, sizeof ev->why, "no mutex");
        goto none;
    }
    /* the thread takes no signals: the caller's (signalfd) stay its own */
    int e = carma_thread_start(&ev->thread, NULL, nvml_events_run, nv);
    if (e) {
        pthread_mutex_destroy(&ev->lock);
        fmt_trunc(ev->why, sizeof ev->why, "no thread: %s", strerror(e));
        goto none;
    }
    ev->started = 1;
    return;
none:
    if (ev->fd >= 0)
        close(ev->fd);
    ev->fd = -1;
    ev->registered = 0;
    nv->f.event_free(ev->set);
    ev->set = NULL;
}

/* Stops the thread. 0, or -1 when it did not end within NVML_EVENT_JOIN_S (a driver
 * that holds its wait): it and everything it may use are then left as they are. */
static int nvml_events_stop(struct nvml_backend *nv)
{
    struct nvml_events *ev = &nv->ev;
    if (ev->started) {
        atomic_store(&ev->stop, 1);
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += NVML_EVENT_JOIN_S;
        if (pthread_timedjoin_np(ev->thread, NULL, &dl) != 0)
            return -1;
        pthread_mutex_destroy(&ev->lock);
        ev->started = 0;
    }
    if (ev->set && nv->f.event_free)
        nv->f.event_free(ev->set);
    ev->set = NULL;
    if (ev->fd >= 0)
        close(ev->fd);
    ev->fd = -1;
    return 0;
}

/* ---- the ops ---- */

static struct nvml_backend *nvml_of(struct carma_gpu_backend *b)
{
    return b->impl;
}

static int nvml_count(struct carma_gpu_backend *b, unsigned *n)
{
    *n = nvml_of(b)->n;
    return 0;
}

static int nvml_info(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_info *out)
{
    struct nvml_backend *nv = nvml_of(b);
    if (i >= nv->n)
        return -EINVAL;
    *out = nv->g[i].info;
    return 0;
}

/* Memory used and free; 0, or a negative errno (g->lost set on GPU_IS_LOST). */
static int nvml_read_mem(struct nvml_backend *nv, struct nvml_gpu *g, uint64_t *total_out,
                         uint64_t *used, uint64_t *free_b)
{
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    uint64_t total = 0, u = 0, f = 0;
    if (nv->f.mem_v2 && !(g->absent & NV_MEM_V2)) {
        nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
        r = nv->f.mem_v2(g->dev, &m);
        if (r == NVML_SUCCESS) {
            total = m.total;
            u = m.used;
            f = m.free;
        } else if (nvml_is_absence(r) || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
            g->absent |= NV_MEM_V2; /* an older driver: v1 from now on */
        }
    }
    /* v1 only where v2 does not exist; a v2 error (a timeout) is the answer. */
    if (r != NVML_SUCCESS && (!nv->f.mem_v2 || (g->absent & NV_MEM_V2)) && nv->f.mem_v1) {
        nvmlMemory_t m = {0};
        r = nv->f.mem_v1(g->dev, &m);
        if (r == NVML_SUCCESS) {
            total = m.total;
            u = m.used;
            f = m.free;
        }
    }
    if (r == NVML_ERROR_GPU_IS_LOST) {
        g->lost = 1;
        return -ENODEV;
    }
    if (r != NVML_SUCCESS)
        return nvml_errno(r);
    *total_out = total;
    return carma_gpu_answer_mem(total, u, f, used, free_b);
}

static int nvml_sample(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_sample *out)
{
    struct nvml_backend *nv = nvml_of(b);
    if (i >= nv->n)
        return -EINVAL;
    struct nvml_gpu *g = &nv->g[i];
    memset(out, 0, sizeof *out);
    out->util_gpu = out->util_mem = out->power_w = out->energy_j = -1;
    out->smact = out->smocc = out->drama = out->tensor = out->gract = -1;
    if (!g->lost) {
        uint64_t total = 0;
        int rc = nvml_read_mem(nv, g, &total, &out->mem_used_bytes, &out->mem_free_bytes);
        if (rc && !g->lost)
            return rc;
    }
    nvmlReturn_t r;
    if (!g->lost && nv->f.util && !(g->absent & NV_UTIL)) {
        nvmlUtilization_t u = {0};
        if ((r = nv->f.util(g->dev, &u)) == NVML_SUCCESS) {
            out->util_gpu = carma_gpu_answer_pct(u.gpu);
            out->util_mem = carma_gpu_answer_pct(u.memory);
        } else if (nvml_is_absence(r)) {
            g->absent |= NV_UTIL;
        } else if (r == NVML_ERROR_GPU_IS_LOST) {
            g->lost = 1;
        }
    }
    if (!g->lost && nv->f.power && !(g->absent & NV_POWER)) {
        unsigned mw = 0;
        if ((r = nv->f.power(g->dev, &mw)) == NVML_SUCCESS)
            out->power_w = carma_gpu_answer_power_mw(mw);
        else if (nvml_is_absence(r))
            g->absent |= NV_POWER;
        else if (r == NVML_ERROR_GPU_IS_LOST)
            g->lost = 1;
    }
    if (!g->lost && nv->f.energy && !(g->absent & NV_ENERGY)) {
        unsigned long long mj = 0;
        if ((r = nv->f.energy(g->dev, &mj)) == NVML_SUCCESS)
            out->energy_j = (double)mj / 1000;
        else if (nvml_is_absence(r))
            g->absent |= NV_ENERGY;
        else if (r == NVML_ERROR_GPU_IS_LOST)
            g->lost = 1;
    }
    if (!g->lost && g->dcgm_k >= 0) {
        struct carma_dcgm_prof p;
        if (carma_dcgm_read(nv->dcgm, (unsigned)g->dcgm_k, &p) == 0) {
            out->gract = p.gract;
            out->smact = p.smact;
            out->smocc = p.smocc;
            out->tensor = p.tensor;
            out->drama = p.drama;
            if (p.lost)
                g->lost = 1;
        }
    } else if (!g->lost && g->gpm_on) {
        nvml_gpm_read(nv, g, out);
    }
    if (g->lost) {
        /* Drain it: keep the last memory figures, every other signal absent. */
        memset(out, 0, sizeof *out);
        out->mem_used_bytes = g->last_used;
        out->mem_free_bytes = g->last_free;
        out->util_gpu = out->util_mem = out->power_w = out->energy_j = -1;
        out->smact = out->smocc = out->drama = out->tensor = out->gract = -1;
        out->lost = 1;
        return 0;
    }
    g->last_used = out->mem_used_bytes;
    g->last_free = out->mem_free_bytes;
    return 0;
}

/* One of NVML's process lists (fn, or the 16-byte-record fn_v1) of GPU g, cleaned into
 * out (*n in: capacity, out: count; 0 when the call failed, INSUFFICIENT_SIZE included,
 * for NVML then wrote nothing). absent_bit: the nvml_gpu.absent bit that an absence
 * answer sets. */
static int nvml_proc_list(struct nvml_backend *nv, struct nvml_gpu *g, nvml_procs_fn fn,
                          nvml_procs_v1_fn fn_v1, unsigned absent_bit, struct carma_gpu_proc *out,
                          size_t *n)
{
    unsigned cnt = NVML_PROC_BUF;
    nvmlReturn_t r;
    size_t stride;
    /* A count larger than what was written must not resurrect older records. */
    memset(nv->procbuf, 0, nv->proc_dirty);
    if (fn) {
        r = fn(g->dev, &cnt, nv->procbuf);
        stride = sizeof(nvmlProcessInfo_t);
    } else if (fn_v1) {
        /* The v1 records are smaller: the same buffer holds NVML_PROC_BUF of them. */
        r = fn_v1(g->dev, &cnt, (nvmlProcessInfo_v1_t *)(void *)nv->procbuf);
        stride = sizeof(nvmlProcessInfo_v1_t);
    } else {
        *n = 0;
        return -ENOTSUP;
    }
    if (r == NVML_ERROR_GPU_IS_LOST)
        g->lost = 1;
    else if (nvml_is_absence(r))
        g->absent |= absent_bit;
    size_t recs = r == NVML_SUCCESS && cnt < NVML_PROC_BUF ? cnt : NVML_PROC_BUF;
    nv->proc_dirty = recs * stride;
    if (r != NVML_SUCCESS) { /* nothing read: the caller's out holds none of it */
        *n = 0;
        return nvml_errno(r);
    }
    return carma_gpu_answer_procs(nv->procbuf, stride, cnt, NVML_PROC_BUF, out, n);
}

/* The compute processes, and the MPS clients, which NVML lists apart (under MPS the
 * compute list holds the MPS server, each client only the MPS list). A pid in both is
 * one process: its larger figure. */
static int nvml_processes(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_proc *out,
                          size_t *n)
{
    struct nvml_backend *nv = nvml_of(b);
    if (i >= nv->n)
        return -EINVAL;
    struct nvml_gpu *g = &nv->g[i];
    if (g->lost)
        return -ENODEV;
    if (g->absent & NV_PROCS)
        return -ENOTSUP;
    size_t cap = *n;
    int rc = nvml_proc_list(nv, g, nv->f.procs, nv->f.procs_v1, NV_PROCS, out, n);
    if (rc || g->absent & NV_MPS_PROCS || (!nv->f.mps_procs && !nv->f.mps_procs_v1))
        return rc;
    struct carma_gpu_proc mps[CARMA_GPU_MAX_PROCS];
    size_t nm = CARMA_GPU_MAX_PROCS;
    int mrc = nvml_proc_list(nv, g, nv->f.mps_procs, nv->f.mps_procs_v1, NV_MPS_PROCS, mps, &nm);
    if (mrc == -ENOTSUP && g->absent & NV_MPS_PROCS)
        return 0; /* no MPS list on this GPU: the compute list is all */
    if (mrc && mrc != -EOVERFLOW)
        return mrc;
    for (size_t k = 0; k < nm; k++)
        if (carma_gpu_procs_add(out, n, cap, mps[k].pid, mps[k].mem_bytes, 0))
            mrc = -EOVERFLOW;
    return mrc;
}

static void nvml_describe(struct carma_gpu_backend *b, char *buf, size_t cap)
{
    struct nvml_backend *nv = nvml_of(b);
    if (!cap)
        return;
    char prof[256];
    if (nv->dcgm) {
        char d[200];
        carma_dcgm_describe(nv->dcgm, d, sizeof d);
        fmt_trunc(prof, sizeof prof, "SMACT/SMOCC/DRAMA from %s, on %u of %u GPUs%s", d,
                 nv->dcgm_matched, nv->n, nv->gpm_count ? ", GPM on the others" : "");
    } else if (nv->gpm_count) {
        fmt_trunc(prof, sizeof prof, "SMACT/SMOCC/DRAMA from NVML GPM on %u of %u GPUs",
                 nv->gpm_count, nv->n);
    } else {
        fmt_trunc(prof, sizeof prof, "no SMACT/SMOCC/DRAMA source (%s): utilisation only",
                 nv->prof_why[0] ? nv->prof_why : "no DCGM, no GPM");
    }
    char skipped[160] = "";
    if (nv->skipped)
        fmt_trunc(skipped, sizeof skipped, "; %u GPU%s skipped: %s", nv->skipped,
                 nv->skipped > 1 ? "s" : "", nv->skip_why);
    char islands[192];
    if (nv->islands)
        fmt_trunc(islands, sizeof islands, " in %u island%s", nv->islands,
                  nv->islands == 1 ? "" : "s");
    else
        fmt_trunc(islands, sizeof islands, ", islands unknown (%s)", nv->island_why);
    char xids[256] = "";
    if (nv->want_xids && nv->ev.started) {
        pthread_mutex_lock(&nv->ev.lock);
        uint64_t failing = nv->ev.wait_failures;
        nvmlReturn_t last = nv->ev.wait_err;
        unsigned reg = nv->ev.registered, rebuilt = nv->ev.rebuilds;
        char why[sizeof nv->ev.why];
        memcpy(why, nv->ev.why, sizeof why);
        pthread_mutex_unlock(&nv->ev.lock);
        char eb[96], rb[48] = "";
        if (rebuilt)
            fmt_trunc(rb, sizeof rb, ", registered again %u time%s", rebuilt,
                      rebuilt == 1 ? "" : "s");
        fmt_trunc(xids, sizeof xids, "; Xid events from %u of %u GPUs%s%s%s%s%s", reg, nv->n,
                  why[0] ? ", " : "", why, rb, failing ? ", waits failing: " : "",
                  failing ? nvml_errstr(nv, last, eb, sizeof eb) : "");
    } else if (nv->want_xids) {
        fmt_trunc(xids, sizeof xids, "; no Xid events: %s", nv->ev.why);
    }
    fmt_trunc(buf, cap, "nvml %s (%s, %s%s, memory %s; %u GPUs%s%s); %s%s", nv->driver,
              nv->f.init_name, nv->f.procs_name ? nv->f.procs_name : "no process list",
              nv->f.procs_name && (nv->f.mps_procs || nv->f.mps_procs_v1) ? " and the MPS list"
                                                                          : "",
              nv->f.mem_name, nv->n, islands, skipped, prof, xids);
}

static int nvml_xid_fd(struct carma_gpu_backend *b)
{
    return nvml_of(b)->ev.fd;
}

static size_t nvml_xids(struct carma_gpu_backend *b, struct carma_gpu_xid *out, size_t cap,
                        uint64_t *lost)
{
    struct nvml_events *ev = &nvml_of(b)->ev;
    size_t n = 0;
    if (lost)
        *lost = 0;
    if (!ev->started)
        return 0;
    pthread_mutex_lock(&ev->lock);
    for (; n < cap && ev->len; n++, ev->len--) {
        out[n] = ev->q[ev->head];
        ev->head = (ev->head + 1) % CARMA_GPU_XID_QUEUE;
    }
    if (lost)
        *lost = ev->lost;
    ev->lost = 0;
    uint64_t v;
    if (!ev->len && read(ev->fd, &v, sizeof v) < 0) {
        /* EAGAIN: nothing was counted */
    }
    pthread_mutex_unlock(&ev->lock);
    return n;
}

static void nvml_free(struct nvml_backend *nv)
{
    if (!nv)
        return;
    if (nvml_events_stop(nv))
        return; /* its thread is stuck in the driver: nothing it may touch is freed */
    for (unsigned i = 0; nv->g && i < nv->n; i++)
        nvml_gpm_free(nv, &nv->g[i]);
    if (nv->dcgm)
        carma_dcgm_close(nv->dcgm);
    if (nv->inited && nv->f.shutdown)
        nv->f.shutdown();
    if (nv->dl)
        dlclose(nv->dl);
    free(nv->g);
    free(nv->procbuf);
    free(nv->gpm_req);
    free(nv);
}

static void nvml_close(struct carma_gpu_backend *b)
{
    nvml_free(nvml_of(b));
    b->impl = NULL;
    b->ops = NULL;
}

static const struct carma_gpu_backend_ops nvml_ops = {
    .name = "nvml",
    .count = nvml_count,
    .info = nvml_info,
    .sample = nvml_sample,
    .processes = nvml_processes,
    .attach = NULL,
    .detach = NULL,
    .close = nvml_close,
    .describe = nvml_describe,
    .xid_fd = nvml_xid_fd,
    .xids = nvml_xids,
};

/* Fills nv->g[nv->n] from NVML device `idx`; 0, or why it is skipped. */
static int nvml_gpu_open(struct nvml_backend *nv, unsigned idx, char *why, size_t whycap)
{
    struct nvml_gpu *g = &nv->g[nv->n];
    memset(g, 0, sizeof *g);
    g->dcgm_k = -1;
    char eb[96];
    nvmlReturn_t r = nv->f.handle(idx, &g->dev);
    if (r != NVML_SUCCESS) {
        fmt_trunc(why, whycap, "GPU %u: no handle: %s", idx, nvml_errstr(nv, r, eb, sizeof eb));
        return nvml_errno(r);
    }
    char raw[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    memset(raw, 0, sizeof raw);
    r = nv->f.uuid(g->dev, raw, sizeof raw);
    if (r == NVML_SUCCESS &&
        carma_gpu_answer_str(g->info.uuid, sizeof g->info.uuid, raw, sizeof raw) == 0)
        r = NVML_ERROR_UNKNOWN;
    if (r != NVML_SUCCESS) {
        fmt_trunc(why, whycap, "GPU %u: no UUID: %s", idx, nvml_errstr(nv, r, eb, sizeof eb));
        return r == NVML_ERROR_UNKNOWN ? -EIO : nvml_errno(r);
    }
    /* jobs reach a GPU by its UUID (CUDA_VISIBLE_DEVICES=GPU-...): a second GPU that
     * answers one already taken would send its jobs to the first */
    for (unsigned k = 0; k < nv->n; k++)
        if (!strcmp(nv->g[k].info.uuid, g->info.uuid)) {
            fmt_trunc(why, whycap, "GPU %u (%s): an earlier GPU's UUID too", idx, g->info.uuid);
            return -EEXIST;
        }
    memset(raw, 0, sizeof raw);
    if (!nv->f.name || nv->f.name(g->dev, raw, sizeof raw) != NVML_SUCCESS ||
        carma_gpu_answer_str(g->info.name, sizeof g->info.name, raw, sizeof raw) == 0)
        fmt_trunc(g->info.name, sizeof g->info.name, "NVIDIA GPU");
    /* the PCI bus id: the kernel's Xid lines name the GPU by it (docs/daemon.md); none
     * when the driver does not answer */
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (nv->f.pci && nv->f.pci(g->dev, &pci) == NVML_SUCCESS) {
        if (nv->f.pci_legacy)
            carma_gpu_answer_str(g->info.pci_bus_id, sizeof g->info.pci_bus_id, pci.busIdLegacy,
                                 sizeof pci.busIdLegacy);
        else
            carma_gpu_answer_str(g->info.pci_bus_id, sizeof g->info.pci_bus_id, pci.busId,
                                 sizeof pci.busId);
    }
    uint64_t total = 0, used = 0, fr = 0;
    int rc = nvml_read_mem(nv, g, &total, &used, &fr);
    if (rc) {
        fmt_trunc(why, whycap, "GPU %u (%s): no memory figures: %s", idx, g->info.uuid,
                 strerror(-rc));
        return rc;
    }
    g->info.mem_total_bytes = total; /* v2: reserved + free + used */
    g->last_used = used;
    g->last_free = fr;
    unsigned mw = 0;
    g->info.power_limit_w = -1;
    if (nv->f.power_limit && nv->f.power_limit(g->dev, &mw) == NVML_SUCCESS)
        g->info.power_limit_w = carma_gpu_answer_power_mw(mw);
    unsigned cur = 0, pend = 0;
    g->info.island = -1; /* nvml_islands, once every GPU is open */
    g->info.mig_mode = -1;
    if (nv->f.mig_mode && nv->f.mig_mode(g->dev, &cur, &pend) == NVML_SUCCESS)
        g->info.mig_mode = cur == NVML_DEVICE_MIG_ENABLE ? 1 : 0;
    return 0;
}

int carma_gpu_open_nvml_opts(struct carma_gpu_backend *b, const struct carma_gpu_nvml_opts *o,
                             struct carma_err *err)
{
    static const struct carma_gpu_nvml_opts defaults;
    if (!o)
        o = &defaults;
    const char *lib = o->lib ? o->lib : "libnvidia-ml.so.1";
    struct nvml_backend *nv = calloc(1, sizeof *nv);
    if (!nv)
        return carma_err_set(err, -ENOMEM, "NVML: out of memory");
    nv->ev.fd = -1;
    int rc;
    nv->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!nv->dl) {
        const char *e = dlerror();
        rc = carma_err_set(err, -ENOENT, "cannot load %s (no NVIDIA driver?): %.200s", lib,
                           e ? e : "dlopen failed");
        goto fail;
    }
    if ((rc = nvml_resolve(nv, lib, err)))
        goto fail;
    char eb[96];
    nvmlReturn_t r = nv->f.init();
    if (r != NVML_SUCCESS) {
        rc = carma_err_set(err, nvml_errno(r) ? nvml_errno(r) : -EIO, "%s: %s failed: %s", lib,
                           nv->f.init_name, nvml_errstr(nv, r, eb, sizeof eb));
        goto fail;
    }
    nv->inited = 1;
    char raw[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
    if (!nv->f.driver_version || nv->f.driver_version(raw, sizeof raw) != NVML_SUCCESS ||
        carma_gpu_answer_str(nv->driver, sizeof nv->driver, raw, sizeof raw) == 0)
        fmt_trunc(nv->driver, sizeof nv->driver, "(driver version unknown)");
    unsigned count = 0;
    if ((r = nv->f.count(&count)) != NVML_SUCCESS) {
        rc = carma_err_set(err, nvml_errno(r) ? nvml_errno(r) : -EIO,
                           "%s: cannot count GPUs: %s", lib, nvml_errstr(nv, r, eb, sizeof eb));
        goto fail;
    }
    if (count > CARMA_GPU_MAX)
        count = CARMA_GPU_MAX; /* absurd, or more than carma handles: the first ones */
    nv->g = calloc(count ? count : 1, sizeof *nv->g);
    nv->procbuf = calloc(NVML_PROC_BUF, sizeof *nv->procbuf);
    nv->proc_dirty = 0;
    if (!nv->g || !nv->procbuf) {
        rc = carma_err_set(err, -ENOMEM, "NVML: out of memory");
        goto fail;
    }
    for (unsigned idx = 0; idx < count; idx++) {
        char why[sizeof nv->skip_why];
        if (nvml_gpu_open(nv, idx, why, sizeof why) == 0) {
            nv->n++;
        } else {
            if (!nv->skipped)
                fmt_trunc(nv->skip_why, sizeof nv->skip_why, "%s", why);
            nv->skipped++;
        }
    }
    if (nv->n == 0) {
        rc = carma_err_set(err, -ENODEV, "%s: no usable GPU (%u listed%s%s)", lib, count,
                           nv->skipped ? ": " : "", nv->skip_why);
        goto fail;
    }
    nvml_islands(nv);
    /* Profiling signals: DCGM first, GPM for the GPUs DCGM does not cover. */
    if (o->dcgm != CARMA_GPU_SRC_OFF) {
        struct carma_dcgm_opts dop = {
            .lib = o->dcgm_lib, .addr = o->dcgm_addr, .interval_ms = o->interval_ms};
        struct carma_err derr = {{0}};
        int drc = carma_dcgm_open(&nv->dcgm, &dop, &derr);
        if (drc == 0) {
            for (unsigned i = 0; i < nv->n; i++)
                for (unsigned k = 0; k < carma_dcgm_count(nv->dcgm); k++)
                    if (!strcmp(carma_dcgm_uuid(nv->dcgm, k), nv->g[i].info.uuid)) {
                        nv->g[i].dcgm_k = (int)k;
                        nv->dcgm_matched++;
                        break;
                    }
            if (!nv->dcgm_matched) {
                carma_dcgm_close(nv->dcgm);
                nv->dcgm = NULL;
                fmt_trunc(nv->prof_why, sizeof nv->prof_why, "DCGM knows none of NVML's GPUs");
                drc = -ENODEV;
            }
        } else {
            fmt_trunc(nv->prof_why, sizeof nv->prof_why, "%s", derr.msg);
        }
        if (drc && o->dcgm == CARMA_GPU_SRC_REQUIRE) {
            rc = carma_err_set(err, drc, "DCGM required: %s", nv->prof_why);
            goto fail;
        }
    }
    if (o->gpm != CARMA_GPU_SRC_OFF) {
        for (unsigned i = 0; i < nv->n; i++)
            if (nv->g[i].dcgm_k < 0)
                nvml_gpm_start(nv, &nv->g[i]);
        if (o->gpm == CARMA_GPU_SRC_REQUIRE && nv->gpm_count + nv->dcgm_matched < nv->n) {
            rc = carma_err_set(err, -ENOTSUP, "GPM required: only %u of %u GPUs support it",
                               nv->gpm_count, nv->n);
            goto fail;
        }
    }
    nv->want_xids = o->xid_events;
    if (nv->want_xids)
        nvml_events_start(nv);
    b->ops = &nvml_ops;
    b->impl = nv;
    return 0;
fail:
    nvml_free(nv);
    return rc;
}

int carma_gpu_open_nvml(struct carma_gpu_backend *b, const char *lib, struct carma_err *err)
{
    struct carma_gpu_nvml_opts o = {.lib = lib};
    return carma_gpu_open_nvml_opts(b, &o, err);
}
