/* A fake libnvidia-ml.so.1 for tests: the NVML subset carma uses (src/gpu/nvml_api.h),
 * answering from a small text file named by $CARMA_FAKE_NVML_STATE, re-read whenever
 * it changes (size, mtime or inode), so a test rewrites it to change the GPUs under
 * a running carmad. Without the variable nvmlInit answers DRIVER_NOT_LOADED.
 *
 * The state file, one directive per line, '#' starts a comment, values with spaces
 * in double quotes, sizes in bytes or with a KiB/MiB/GiB suffix:
 *
 *   driver 550.54.15
 *   init OK                       what nvmlInit answers (any NVML error name)
 *   count 100000                  what nvmlDeviceGetCount answers (default: gpus)
 *   gpu uuid=GPU-... name="NVIDIA A100-SXM4-40GB" mem_total=40GiB mem_used=1GiB
 *       mem_reserved=512MiB util=37 mem_util=12 power_mw=61000 power_limit_mw=400000
 *       energy_mj=123456 mig=0 lost=0 gpm=1 sm=40 smocc=20 dram=30 tensor=5 gract=45
 *       pci=00000000:00:06.0
 *       (all on one line; every key optional; lost=1: every call on it answers
 *        GPU_IS_LOST; gpm=1: GPM supported, sm..gract are its metrics in percent;
 *        pci: the bus id nvmlDeviceGetPciInfo_v3 answers, at most 31 characters;
 *        the unversioned call answers it in the old layout's 16 bytes, an 8-digit
 *        domain cut to 4 as old drivers print it; without pci both answer
 *        NOT_SUPPORTED)
 *   proc GPU pid=1234 mem=1GiB    a compute process on GPU (index); mem=unknown
 *                                 gives NVML_VALUE_NOT_AVAILABLE; mps=1: an MPS client,
 *                                 listed by the MPS call only (as the real driver does)
 *   fail GPU|* FUNCTION ERROR     FUNCTION on that GPU (or every GPU) answers ERROR,
 *                                 e.g. fail 1 nvmlDeviceGetPowerUsage NOT_SUPPORTED
 *   procs_count N                 the process call claims N records (absurd counts)
 *   uuid_no_nul 1                 UUIDs and names fill the buffer without a NUL
 *   init_thread 1                 the first nvmlInit that succeeds starts a thread of the
 *                                 library's own that lives until the process ends (as
 *                                 vendor libraries' helper threads do), with the signal
 *                                 mask of the thread that called it
 *   xid GPU N [gi=ID]             a critical Xid N on GPU (index), delivered once by
 *                                 nvmlEventSetWait to each event set registered for
 *                                 it, in file order (append lines to add events); a
 *                                 set learns of the lines read after it registered
 *   xid_late GPU N [gi=ID]        the same, reported by the driver just after an event
 *                                 set registered: delivered also to a set registered
 *                                 while it is among the file's last lines (only
 *                                 xid_late lines after it), e.g. an Xid a restarted
 *                                 daemon learns of first; once in a process (by its
 *                                 place among the xid lines): a set registered after
 *                                 a wait handed it out (one built again) does not get
 *                                 it again. The next call outside the event API (any
 *                                 thread's) waits, 5 s at most, until the set's waiter
 *                                 took it (a wait handed it out, and the set was waited
 *                                 on again or freed): it came before that call; not
 *                                 for a set whose wait failed (an injected failure, a
 *                                 lost GPU), which cannot take it now
 *   xid_device 0xADDR N           an Xid event on a device handle NVML never gave
 *                                 (a set holding a lost GPU fails every wait with
 *                                 GPU_IS_LOST; a registration that answers UNKNOWN
 *                                 leaves its set undefined: only freeing it works)
 *   topology A B LEVEL            what nvmlDeviceGetTopologyCommonAncestor answers for
 *                                 GPUs A and B (indices, either order): INTERNAL,
 *                                 SINGLE, MULTIPLE, HOSTBRIDGE, NODE (or CPU), SYSTEM,
 *                                 or any number (levels NVML does not have); a pair
 *                                 without a line answers NOT_SUPPORTED
 *   nvlink A B [STATUS]           nvmlDeviceGetP2PStatus for NVML_P2P_CAPS_INDEX_NVLINK
 *                                 answers SUCCESS with STATUS (a number, default 0:
 *                                 NVML_P2P_STATUS_OK) for A and B; a pair without a
 *                                 line, and every other capability index, answer
 *                                 NOT_SUPPORTED (both calls take `fail` lines, on
 *                                 either GPU of the pair)
 *
 * Build variants: this file alone is the modern library (every versioned symbol);
 * tests/fake/nvidia-ml-old/ compiles it with FAKE_NVML_LEGACY, which exports only
 * the old names (nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, the
 * 16-byte-record nvmlDeviceGetComputeRunningProcesses, nvmlDeviceGetMemoryInfo) and
 * no energy, GPM or topology calls, so the backend's fallbacks run through a real
 * failing dlsym.
 *
 * Events: nvmlEventSetWait runs on the caller's event thread while other calls run
 * on its main thread, so the state is re-read (fake_load, main thread only) under
 * F.lock, and the wait reads the Xid lines and failures under it; the wait never
 * re-reads the file itself: a test's new Xid lines arrive with the next other call.
 *
 * Test code: global state is fine here (a library has nowhere else to keep it). */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))
#define FAKE_GPUS 64
#define FAKE_PROCS 4096
#define FAKE_FAILS 64
#define FAKE_XIDS 1024

struct fake_gpu {
    char uuid[128], name[128], pci[32];
    unsigned long long mem_total, mem_used, mem_reserved, energy_mj;
    unsigned util, mem_util, power_mw, power_limit_mw, mig;
    int lost, gpm;
    double sm, smocc, dram, tensor, gract;
};

struct fake_proc {
    unsigned gpu, pid;
    unsigned long long mem;
    int mps;
};

struct fake_fail {
    int gpu; /* -1: all */
    char fn[64];
    nvmlReturn_t r;
};

struct fake_xid {
    int gpu; /* -1: on xid_device's handle */
    uintptr_t device;
    unsigned long long xid;
    unsigned gi;
    int late; /* xid_late */
};

static struct {
    char path[4096];
    struct stat st;
    int loaded;
    char driver[80];
    nvmlReturn_t init_r;
    long count; /* -1: number of gpus */
    long procs_count; /* -1: the real count */
    int uuid_no_nul;
    int init_thread, thread_started;
    unsigned ngpus, nprocs, nfails;
    struct fake_gpu gpu[FAKE_GPUS];
    struct fake_proc proc[FAKE_PROCS];
    struct fake_fail fail[FAKE_FAILS];
    int refs; /* nvmlInit minus nvmlShutdown */
    pthread_mutex_t lock;
    unsigned nxids;
    struct fake_xid xids[FAKE_XIDS];
    /* waits that found no Xid line to hand out since the lines were last read or one was
     * handed out (fake_nvml_idle_waits) */
    unsigned long idle_waits;
    /* sets handed xid_late lines at registration that their waiter has not taken yet
     * (those of generation late_gen: fake_late_settle giving up starts the next) */
    unsigned late_sets, late_gen;
    /* the xid lines (by their place) that are xid_late lines a wait handed out: each is
     * handed out once in the process */
    unsigned char late_handed[FAKE_XIDS];
    pthread_cond_t late_cv;
    /* topology and nvlink lines, by pair (both orders) */
    unsigned char topo_set[FAKE_GPUS][FAKE_GPUS], nvl_set[FAKE_GPUS][FAKE_GPUS];
    unsigned topo[FAKE_GPUS][FAKE_GPUS], nvl[FAKE_GPUS][FAKE_GPUS];
} F = {.lock = PTHREAD_MUTEX_INITIALIZER, .late_cv = PTHREAD_COND_INITIALIZER};

static const struct {
    const char *name;
    nvmlReturn_t r;
} fake_errors[] = {
    {"OK", NVML_SUCCESS},
    {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
    {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
    {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
    {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
    {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
    {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
    {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
    {"TIMEOUT", NVML_ERROR_TIMEOUT},
    {"FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
    {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
    {"LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
    {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
    {"MEMORY", NVML_ERROR_MEMORY},
    {"UNKNOWN", NVML_ERROR_UNKNOWN},
};

static int fake_error_parse(const char *s, nvmlReturn_t *r)
{
    for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
        if (!strcmp(s, fake_errors[i].name)) {
            *r = fake_errors[i].r;
            return 0;
        }
    return -1;
}

/* A number, or with named=1 also a topology level's name; -1 when it is neither. */
static int fake_level_parse(const char *s, int named, unsigned *lv)
{
    static const struct {
        const char *name;
        unsigned v;
    } names[] = {{"INTERNAL", NVML_TOPOLOGY_INTERNAL}, {"SINGLE", NVML_TOPOLOGY_SINGLE},
                 {"MULTIPLE", NVML_TOPOLOGY_MULTIPLE}, {"HOSTBRIDGE", NVML_TOPOLOGY_HOSTBRIDGE},
                 {"NODE", NVML_TOPOLOGY_NODE},         {"CPU", NVML_TOPOLOGY_NODE},
                 {"SYSTEM", NVML_TOPOLOGY_SYSTEM}};
    for (size_t i = 0; named && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *lv = names[i].v;
            return 0;
        }
    char *e;
    errno = 0;
    unsigned long v = strtoul(s, &e, 0);
    if (!*s || *e || errno || v > 0xFFFFFFFFul)
        return -1;
    *lv = (unsigned)v;
    return 0;
}

static unsigned long long fake_size(const char *v)
{
    char *e;
    unsigned long long x = strtoull(v, &e, 10);
    if (!strcmp(e, "KiB"))
        x <<= 10;
    else if (!strcmp(e, "MiB"))
        x <<= 20;
    else if (!strcmp(e, "GiB"))
        x <<= 30;
    return x;
}

/* Splits line into words in place; "quoted values" keep their spaces. */
static int fake_words(char *line, char **w, int cap)
{
    int n = 0;
    char *p = line;
    while (*p && n < cap) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            break;
        w[n++] = p;
        char *o = p;
        int q = 0;
        while (*p && (q || !isspace((unsigned char)*p))) {
            if (*p == '"')
                q = !q;
            else
                *o++ = *p;
            p++;
        }
        if (*p)
            p++;
        *o = '\0';
    }
    return n;
}

static void fake_parse_gpu(struct fake_gpu *g, char **w, int n)
{
    for (int i = 1; i < n; i++) {
        char *eq = strchr(w[i], '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *k = w[i], *v = eq + 1;
        if (!strcmp(k, "uuid"))
            snprintf(g->uuid, sizeof g->uuid, "%s", v);
        else if (!strcmp(k, "name"))
            snprintf(g->name, sizeof g->name, "%s", v);
        else if (!strcmp(k, "pci"))
            snprintf(g->pci, sizeof g->pci, "%s", v);
        else if (!strcmp(k, "mem_total"))
            g->mem_total = fake_size(v);
        else if (!strcmp(k, "mem_used"))
            g->mem_used = fake_size(v);
        else if (!strcmp(k, "mem_reserved"))
            g->mem_reserved = fake_size(v);
        else if (!strcmp(k, "util"))
            g->util = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(k, "mem_util"))
            g->mem_util = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(k, "power_mw"))
            g->power_mw = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(k, "power_limit_mw"))
            g->power_limit_mw = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(k, "energy_mj"))
            g->energy_mj = strtoull(v, NULL, 10);
        else if (!strcmp(k, "mig"))
            g->mig = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(k, "lost"))
            g->lost = atoi(v);
        else if (!strcmp(k, "gpm"))
            g->gpm = atoi(v);
        else if (!strcmp(k, "sm"))
            g->sm = strtod(v, NULL);
        else if (!strcmp(k, "smocc"))
            g->smocc = strtod(v, NULL);
        else if (!strcmp(k, "dram"))
            g->dram = strtod(v, NULL);
        else if (!strcmp(k, "tensor"))
            g->tensor = strtod(v, NULL);
        else if (!strcmp(k, "gract"))
            g->gract = strtod(v, NULL);
    }
}

static void fake_parse(FILE *f)
{
    F.ngpus = F.nprocs = F.nfails = F.nxids = 0;
    F.idle_waits = 0;
    F.init_r = NVML_SUCCESS;
    F.count = -1;
    F.procs_count = -1;
    F.uuid_no_nul = 0;
    F.init_thread = 0;
    memset(F.topo_set, 0, sizeof F.topo_set);
    memset(F.nvl_set, 0, sizeof F.nvl_set);
    snprintf(F.driver, sizeof F.driver, "550.54.15");
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *w[40];
        int n = fake_words(line, w, 40);
        if (n == 0)
            continue;
        if (!strcmp(w[0], "driver") && n > 1) {
            snprintf(F.driver, sizeof F.driver, "%s", w[1]);
        } else if (!strcmp(w[0], "init") && n > 1) {
            fake_error_parse(w[1], &F.init_r);
        } else if (!strcmp(w[0], "count") && n > 1) {
            F.count = strtol(w[1], NULL, 10);
        } else if (!strcmp(w[0], "procs_count") && n > 1) {
            F.procs_count = strtol(w[1], NULL, 10);
        } else if (!strcmp(w[0], "uuid_no_nul") && n > 1) {
            F.uuid_no_nul = atoi(w[1]);
        } else if (!strcmp(w[0], "init_thread") && n > 1) {
            F.init_thread = atoi(w[1]);
        } else if (!strcmp(w[0], "gpu") && F.ngpus < FAKE_GPUS) {
            struct fake_gpu *g = &F.gpu[F.ngpus];
            memset(g, 0, sizeof *g);
            snprintf(g->uuid, sizeof g->uuid, "GPU-fake0000-0000-0000-0000-%012u", F.ngpus);
            snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-40GB");
            g->mem_total = 40ull << 30;
            g->power_limit_mw = 400000;
            fake_parse_gpu(g, w, n);
            F.ngpus++;
        } else if (!strcmp(w[0], "proc") && n > 1 && F.nprocs < FAKE_PROCS) {
            struct fake_proc *p = &F.proc[F.nprocs];
            p->gpu = (unsigned)strtoul(w[1], NULL, 10);
            p->pid = 0;
            p->mem = 0;
            p->mps = 0;
            for (int i = 2; i < n; i++) {
                if (!strncmp(w[i], "pid=", 4))
                    p->pid = (unsigned)strtoul(w[i] + 4, NULL, 10);
                else if (!strcmp(w[i], "mem=unknown"))
                    p->mem = NVML_VALUE_NOT_AVAILABLE;
                else if (!strncmp(w[i], "mem=", 4))
                    p->mem = fake_size(w[i] + 4);
                else if (!strcmp(w[i], "mps=1"))
                    p->mps = 1;
            }
            F.nprocs++;
        } else if ((!strcmp(w[0], "xid") || !strcmp(w[0], "xid_late") ||
                    !strcmp(w[0], "xid_device")) &&
                   n > 2 && F.nxids < FAKE_XIDS) {
            struct fake_xid *x = &F.xids[F.nxids++];
            x->gpu = strcmp(w[0], "xid_device") ? atoi(w[1]) : -1;
            x->late = !strcmp(w[0], "xid_late");
            x->device = x->gpu < 0 ? (uintptr_t)strtoull(w[1], NULL, 0) : 0;
            x->xid = strtoull(w[2], NULL, 10);
            x->gi = n > 3 && !strncmp(w[3], "gi=", 3) ? (unsigned)strtoul(w[3] + 3, NULL, 10)
                                                      : 0xFFFFFFFFu;
        } else if ((!strcmp(w[0], "topology") && n > 3) || (!strcmp(w[0], "nvlink") && n > 2)) {
            unsigned a = (unsigned)strtoul(w[1], NULL, 10), b = (unsigned)strtoul(w[2], NULL, 10);
            unsigned v = 0; /* nvlink's default: NVML_P2P_STATUS_OK */
            int topo = w[0][0] == 't';
            if (a >= FAKE_GPUS || b >= FAKE_GPUS || (n > 3 && fake_level_parse(w[3], topo, &v)))
                continue;
            unsigned char(*set)[FAKE_GPUS] = topo ? F.topo_set : F.nvl_set;
            unsigned(*val)[FAKE_GPUS] = topo ? F.topo : F.nvl;
            set[a][b] = set[b][a] = 1;
            val[a][b] = val[b][a] = v;
        } else if (!strcmp(w[0], "fail") && n > 3 && F.nfails < FAKE_FAILS) {
            struct fake_fail *x = &F.fail[F.nfails];
            x->gpu = !strcmp(w[1], "*") ? -1 : atoi(w[1]);
            snprintf(x->fn, sizeof x->fn, "%s", w[2]);
            if (fake_error_parse(w[3], &x->r) == 0)
                F.nfails++;
        }
    }
    /* rewritten shorter: the places past its end are new lines' when it grows again */
    memset(F.late_handed + F.nxids, 0, FAKE_XIDS - F.nxids);
}

/* Re-reads the state file when it changed. */
static void fake_reload(void)
{
    const char *path = getenv("CARMA_FAKE_NVML_STATE");
    struct stat st;
    if (!path || stat(path, &st) != 0) {
        F.loaded = 0;
        return;
    }
    if (F.loaded && !strcmp(path, F.path) && st.st_size == F.st.st_size &&
        st.st_ino == F.st.st_ino && st.st_mtim.tv_sec == F.st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == F.st.st_mtim.tv_nsec)
        return;
    FILE *f = fopen(path, "r");
    if (!f) {
        F.loaded = 0;
        return;
    }
    pthread_mutex_lock(&F.lock);
    fake_parse(f);
    pthread_mutex_unlock(&F.lock);
    fclose(f);
    snprintf(F.path, sizeof F.path, "%s", path);
    F.st = st;
    F.loaded = 1;
}

/* Before a call outside the event API: waits until the waiter of every set that was
 * handed xid_late lines at its registration took them (xid_late above), 5 s at most (then
 * those sets are waited for no more). */
static void fake_late_settle(void)
{
    pthread_mutex_lock(&F.lock);
    if (F.late_sets) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        while (F.late_sets && pthread_cond_timedwait(&F.late_cv, &F.lock, &until) != ETIMEDOUT)
            ;
        if (F.late_sets) {
            F.late_sets = 0;
            F.late_gen++;
        }
    }
    pthread_mutex_unlock(&F.lock);
}

/* What every call but the event API's does first. */
static void fake_load(void)
{
    fake_late_settle();
    fake_reload();
}

static nvmlReturn_t fake_failure(int gpu, const char *fn)
{
    for (unsigned i = 0; i < F.nfails; i++)
        if ((F.fail[i].gpu == -1 || F.fail[i].gpu == gpu) && !strcmp(F.fail[i].fn, fn))
            return F.fail[i].r;
    return NVML_SUCCESS;
}

/* The GPU behind a handle, or NULL; *r says why not. events: a call of the event API
 * (it does not wait for xid_late lines to be taken). */
static struct fake_gpu *fake_dev_of(nvmlDevice_t d, const char *fn, nvmlReturn_t *r, int events)
{
    if (events)
        fake_reload();
    else
        fake_load();
    if (F.refs <= 0) {
        *r = NVML_ERROR_UNINITIALIZED;
        return NULL;
    }
    struct fake_gpu *g = (struct fake_gpu *)(void *)d;
    if (g < F.gpu || g >= F.gpu + F.ngpus) {
        *r = NVML_ERROR_INVALID_ARGUMENT;
        return NULL;
    }
    int idx = (int)(g - F.gpu);
    if (g->lost) {
        *r = NVML_ERROR_GPU_IS_LOST;
        return NULL;
    }
    if ((*r = fake_failure(idx, fn)) != NVML_SUCCESS)
        return NULL;
    return g;
}

static struct fake_gpu *fake_dev(nvmlDevice_t d, const char *fn, nvmlReturn_t *r)
{
    return fake_dev_of(d, fn, r, 0);
}

#define DEV(d, fn)                                                                               \
    nvmlReturn_t r_;                                                                             \
    struct fake_gpu *g = fake_dev(d, fn, &r_);                                                   \
    if (!g)                                                                                      \
    return r_

/* init_thread's: waits for signals it does not block, as a library's thread that sleeps
 * in poll or a condition variable would. */
static void *fake_idle_thread(void *arg)
{
    for (;;)
        pause();
    return arg;
}

static nvmlReturn_t fake_init(const char *fn)
{
    fake_load();
    if (!F.loaded)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    nvmlReturn_t r = F.init_r != NVML_SUCCESS ? F.init_r : fake_failure(-1, fn);
    if (r == NVML_SUCCESS)
        F.refs++;
    if (r == NVML_SUCCESS && F.init_thread && !F.thread_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, fake_idle_thread, NULL) == 0) {
            pthread_detach(t);
            F.thread_started = 1;
        }
    }
    return r;
}

EXPORT nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit(void)
{
    return fake_init("nvmlInit");
}

EXPORT nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void)
{
    if (F.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    F.refs--;
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r);
const char *nvmlErrorString(nvmlReturn_t r)
{
    for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
        if (fake_errors[i].r == r)
            return fake_errors[i].name;
    return "fake: unknown error";
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len);
nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    fake_load();
    if (F.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (len < strlen(F.driver) + 1)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, F.driver, strlen(F.driver) + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *n);
nvmlReturn_t nvmlDeviceGetCount(unsigned *n)
{
    fake_load();
    if (F.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    *n = F.count >= 0 ? (unsigned)F.count : F.ngpus;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *d)
{
    fake_load();
    if (F.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (i >= F.ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = fake_failure((int)i, "nvmlDeviceGetHandleByIndex");
    if (r != NVML_SUCCESS)
        return r;
    if (F.gpu[i].lost)
        return NVML_ERROR_GPU_IS_LOST;
    *d = (nvmlDevice_t)(void *)&F.gpu[i];
    return NVML_SUCCESS;
}

static nvmlReturn_t fake_string(const char *s, char *buf, unsigned len)
{
    size_t n = strlen(s);
    if (F.uuid_no_nul) { /* a misbehaving library: the whole buffer, no NUL */
        for (unsigned i = 0; i < len; i++)
            buf[i] = i < n ? s[i] : 'X';
        return NVML_SUCCESS;
    }
    if (len < n + 1)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned len)
{
    DEV(d, "nvmlDeviceGetUUID");
    return fake_string(g->uuid, buf, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned len);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned len)
{
    DEV(d, "nvmlDeviceGetName");
    return fake_string(g->name, buf, len);
}

/* The unversioned call of old drivers: their 52-byte layout, its bus id in the first
 * 16 bytes (the domain's first 4 of 8 digits dropped, as they print it). */
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    DEV(d, "nvmlDeviceGetPciInfo");
    if (!g->pci[0])
        return NVML_ERROR_NOT_SUPPORTED;
    const char *colon = strchr(g->pci, ':');
    const char *s = colon && colon - g->pci == 8 ? g->pci + 4 : g->pci;
    memset(p, 0, 52);
    size_t n = strnlen(s, sizeof p->busIdLegacy - 1);
    memcpy(p->busIdLegacy, s, n); /* NUL from the memset */
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    DEV(d, "nvmlDeviceGetMemoryInfo");
    /* v1 counts reserved memory as used. */
    m->total = g->mem_total;
    m->used = g->mem_used + g->mem_reserved;
    m->free = m->used > m->total ? 0 : m->total - m->used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    DEV(d, "nvmlDeviceGetUtilizationRates");
    u->gpu = g->util;
    u->memory = g->mem_util;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw)
{
    DEV(d, "nvmlDeviceGetPowerUsage");
    *mw = g->power_mw;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw)
{
    DEV(d, "nvmlDeviceGetEnforcedPowerLimit");
    *mw = g->power_limit_mw;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pend);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pend)
{
    DEV(d, "nvmlDeviceGetMigMode");
    *cur = *pend = g->mig;
    return NVML_SUCCESS;
}

/* Fills `cap` records of `stride` bytes (v1: 16, v2/v3: 24) for GPU g. */
/* The compute list (mps 0) or the MPS clients' list (mps 1) of GPU g. */
static nvmlReturn_t fake_procs(struct fake_gpu *g, unsigned *count, void *out, size_t stride,
                               int mps)
{
    unsigned idx = (unsigned)(g - F.gpu), n = 0;
    for (unsigned i = 0; i < F.nprocs; i++)
        n += F.proc[i].gpu == idx && F.proc[i].mps == mps;
    unsigned cap = *count;
    if (n > cap || (F.procs_count >= 0 && (unsigned long)F.procs_count > cap)) {
        *count = F.procs_count >= 0 ? (unsigned)F.procs_count : n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned w = 0;
    for (unsigned i = 0; i < F.nprocs; i++) {
        if (F.proc[i].gpu != idx || F.proc[i].mps != mps)
            continue;
        unsigned char *rec = (unsigned char *)out + (size_t)w * stride;
        memset(rec, 0, stride);
        memcpy(rec, &F.proc[i].pid, 4);
        memcpy(rec + 8, &F.proc[i].mem, 8);
        if (stride == 24) {
            unsigned none = 0xFFFFFFFFu;
            memcpy(rec + 16, &none, 4);
            memcpy(rec + 20, &none, 4);
        }
        w++;
    }
    *count = F.procs_count >= 0 ? (unsigned)F.procs_count : w;
    return NVML_SUCCESS;
}

/* An export of one of NVML's process lists: its name, record type and which list. */
#define FAKE_PROC_LIST(name, rec, mps)                                                             \
    EXPORT nvmlReturn_t name(nvmlDevice_t d, unsigned *count, rec *p);                             \
    nvmlReturn_t name(nvmlDevice_t d, unsigned *count, rec *p)                                     \
    {                                                                                              \
        DEV(d, #name);                                                                             \
        return fake_procs(g, count, p, sizeof *p, mps);                                            \
    }

FAKE_PROC_LIST(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t, 0)

FAKE_PROC_LIST(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t, 1)

/* ---- events ---- */

struct nvmlEventSet_st {
    unsigned magic;
    unsigned long long mask[FAKE_GPUS]; /* registered event types per GPU */
    unsigned delivered;                 /* Xid lines handed out (or skipped) */
    int late;                           /* handed xid_late lines at registration, its
                                           waiter has not taken them yet: up to
                                           late_until, counted in F.late_sets if of
                                           generation late_gen */
    unsigned late_until, late_gen;
};

/* The set's waiter took its xid_late lines (or will not now: never, the set freed or its
 * wait failing): whoever waits for that goes on. Under F.lock. */
static void fake_late_taken(nvmlEventSet_t set, int never)
{
    if (!set->late || !(never || set->delivered >= set->late_until || set->late_until > F.nxids))
        return;
    set->late = 0;
    if (set->late_gen == F.late_gen && F.late_sets) {
        F.late_sets--;
        pthread_cond_broadcast(&F.late_cv);
    }
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    fake_reload();
    if (F.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = fake_failure(-1, "nvmlEventSetCreate");
    if (r != NVML_SUCCESS)
        return r;
    struct nvmlEventSet_st *s = calloc(1, sizeof *s);
    if (!s)
        return NVML_ERROR_MEMORY;
    s->magic = 0x657673;
    *set = s;
    return NVML_SUCCESS;
}

/* A set a registration answered UNKNOWN for: undefined, as NVML says; only freeing it
 * works. */
#define FAKE_SET_UNDEFINED 0x756e64

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    if (!set || (set->magic != 0x657673 && set->magic != FAKE_SET_UNDEFINED))
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&F.lock);
    fake_late_taken(set, 1);
    pthread_mutex_unlock(&F.lock);
    set->magic = 0;
    free(set);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *t);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *t)
{
    nvmlReturn_t r_;
    if (!fake_dev_of(d, "nvmlDeviceGetSupportedEventTypes", &r_, 1))
        return r_;
    *t = 0x1 | 0x2 | 0x4 | nvmlEventTypeXidCriticalError | 0x10;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long t,
                                             nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long t, nvmlEventSet_t set)
{
    if (!set || set->magic != 0x657673)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r_;
    struct fake_gpu *g = fake_dev_of(d, "nvmlDeviceRegisterEvents", &r_, 1);
    if (!g) {
        if (r_ == NVML_ERROR_UNKNOWN)
            set->magic = FAKE_SET_UNDEFINED;
        return r_;
    }
    pthread_mutex_lock(&F.lock);
    set->mask[g - F.gpu] |= t;
    /* a set learns of the Xids that come after it, and of the xid_late lines last that no
     * wait handed out yet */
    unsigned from = F.nxids, fresh = 0;
    while (from > 0 && F.xids[from - 1].late)
        fresh += !F.late_handed[--from];
    set->delivered = from;
    if (fresh) {
        if (!set->late || set->late_gen != F.late_gen) {
            set->late = 1;
            set->late_gen = F.late_gen;
            F.late_sets++;
        }
        set->late_until = F.nxids;
    }
    pthread_mutex_unlock(&F.lock);
    return NVML_SUCCESS;
}

/* v2 fills the instance ids too; v1 writes only the first 24 bytes. */
static nvmlReturn_t fake_wait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms, int v2,
                              const char *fn)
{
    if (!set || set->magic != 0x657673 || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pthread_mutex_lock(&F.lock);
        /* waited on again: what the last wait handed out was taken */
        fake_late_taken(set, 0);
        nvmlReturn_t r = fake_failure(-1, fn);
        /* as the real driver: a lost GPU in the set fails every wait */
        for (unsigned i = 0; r == NVML_SUCCESS && i < F.ngpus; i++)
            if (set->mask[i] && F.gpu[i].lost)
                r = NVML_ERROR_GPU_IS_LOST;
        if (r != NVML_SUCCESS) {
            fake_late_taken(set, 1); /* not by this wait: not waited for */
            pthread_mutex_unlock(&F.lock);
            return r;
        }
        if (set->delivered > F.nxids) /* the file was rewritten shorter */
            set->delivered = F.nxids;
        while (set->delivered < F.nxids) {
            const struct fake_xid *x = &F.xids[set->delivered++];
            if (x->gpu >= 0 && ((unsigned)x->gpu >= F.ngpus ||
                                !(set->mask[x->gpu] & nvmlEventTypeXidCriticalError)))
                continue;
            if (x->late && F.late_handed[set->delivered - 1])
                continue; /* handed out before (to a set built again, or another) */
            if (x->late)
                F.late_handed[set->delivered - 1] = 1;
            data->device = x->gpu >= 0 ? (nvmlDevice_t)(void *)&F.gpu[x->gpu]
                                       : (nvmlDevice_t)(void *)x->device;
            data->eventType = nvmlEventTypeXidCriticalError;
            data->eventData = x->xid;
            if (v2) {
                data->gpuInstanceId = x->gi;
                data->computeInstanceId = x->gi == 0xFFFFFFFFu ? x->gi : 0;
            }
            F.idle_waits = 0;
            pthread_mutex_unlock(&F.lock);
            return NVML_SUCCESS;
        }
        F.idle_waits++;
        pthread_mutex_unlock(&F.lock);
        clock_gettime(CLOCK_MONOTONIC, &now);
        long el = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (el >= (long)ms)
            return NVML_ERROR_TIMEOUT;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms)
{
    return fake_wait(set, data, ms, 0, "nvmlEventSetWait");
}

#ifndef FAKE_NVML_LEGACY
/* Test introspection (not NVML API): the waits that found no Xid line left to hand out
 * since the state file was last read or a line was last handed out. Above 0 once the
 * lines are read: every line was handed out and, with one event set, its waiter called
 * nvmlEventSetWait again after taking the last one (the backend's thread: after queuing
 * it). */
EXPORT unsigned long fake_nvml_idle_waits(void);
unsigned long fake_nvml_idle_waits(void)
{
    pthread_mutex_lock(&F.lock);
    unsigned long n = F.idle_waits;
    pthread_mutex_unlock(&F.lock);
    return n;
}

EXPORT nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void)
{
    return fake_init("nvmlInit_v2");
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    return nvmlDeviceGetCount(n);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    return nvmlDeviceGetHandleByIndex(i, d);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    DEV(d, "nvmlDeviceGetPciInfo_v3");
    if (!g->pci[0])
        return NVML_ERROR_NOT_SUPPORTED;
    memset(p, 0, sizeof *p);
    if (F.uuid_no_nul) /* a misbehaving library: the whole buffer, no NUL */
        memset(p->busId, 'X', sizeof p->busId);
    else
        snprintf(p->busId, sizeof p->busId, "%s", g->pci);
    return NVML_SUCCESS;
}

/* A pair's two handles as indices (each GPU's `fail` lines apply to the pair); an error
 * when either is no GPU's, or both are one. */
static nvmlReturn_t fake_pair(nvmlDevice_t d1, nvmlDevice_t d2, const char *fn, unsigned *i,
                              unsigned *j)
{
    nvmlReturn_t r;
    struct fake_gpu *a = fake_dev(d1, fn, &r);
    if (!a)
        return r;
    struct fake_gpu *b = fake_dev(d2, fn, &r);
    if (!b)
        return r;
    if (a == b)
        return NVML_ERROR_INVALID_ARGUMENT;
    *i = (unsigned)(a - F.gpu);
    *j = (unsigned)(b - F.gpu);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d1, nvmlDevice_t d2,
                                                        nvmlGpuTopologyLevel_t *lv);
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d1, nvmlDevice_t d2,
                                                 nvmlGpuTopologyLevel_t *lv)
{
    unsigned i, j;
    nvmlReturn_t r = fake_pair(d1, d2, "nvmlDeviceGetTopologyCommonAncestor", &i, &j);
    if (r != NVML_SUCCESS)
        return r;
    if (!lv)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!F.topo_set[i][j])
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned v = F.topo[i][j];
    memcpy(lv, &v, sizeof v); /* any number, as a library that knows more levels would */
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2,
                                           nvmlGpuP2PCapsIndex_t idx, nvmlGpuP2PStatus_t *st);
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, nvmlGpuP2PCapsIndex_t idx,
                                    nvmlGpuP2PStatus_t *st)
{
    unsigned i, j;
    nvmlReturn_t r = fake_pair(d1, d2, "nvmlDeviceGetP2PStatus", &i, &j);
    if (r != NVML_SUCCESS)
        return r;
    if (!st)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (idx != NVML_P2P_CAPS_INDEX_NVLINK || !F.nvl_set[i][j])
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned v = F.nvl[i][j];
    memcpy(st, &v, sizeof v);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    DEV(d, "nvmlDeviceGetMemoryInfo_v2");
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    m->total = g->mem_total;
    m->reserved = g->mem_reserved;
    m->used = g->mem_used;
    unsigned long long taken = g->mem_used + g->mem_reserved;
    m->free = taken > g->mem_total ? 0 : g->mem_total - taken;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    DEV(d, "nvmlDeviceGetTotalEnergyConsumption");
    *mj = g->energy_mj;
    return NVML_SUCCESS;
}

FAKE_PROC_LIST(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_t, 0)

FAKE_PROC_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_t, 1)

FAKE_PROC_LIST(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t, 0)

FAKE_PROC_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t, 1)

/* GPM: a sample remembers its GPU; metrics are the state's figures for it. */
struct nvmlGpmSample_st {
    int magic;
    int gpu;
};

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *s);
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *s)
{
    DEV(d, "nvmlGpmQueryDeviceSupport");
    if (s->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = g->gpm ? 1 : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s)
{
    *s = calloc(1, sizeof **s);
    if (!*s)
        return NVML_ERROR_MEMORY;
    (*s)->magic = 0x67706d;
    (*s)->gpu = -1;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
    if (!s || s->magic != 0x67706d)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->magic = 0;
    free(s);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s)
{
    DEV(d, "nvmlGpmSampleGet");
    if (!s || s->magic != 0x67706d)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->gpu = (int)(g - F.gpu);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *q);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *q)
{
    fake_load();
    if (q->version != NVML_GPM_METRICS_GET_VERSION || q->numMetrics > 98 || !q->sample1 ||
        !q->sample2 || q->sample1->magic != 0x67706d || q->sample2->magic != 0x67706d ||
        q->sample1->gpu != q->sample2->gpu || q->sample2->gpu < 0 ||
        (unsigned)q->sample2->gpu >= F.ngpus || q->sample1 == q->sample2)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct fake_gpu *g = &F.gpu[q->sample2->gpu];
    nvmlReturn_t fr = fake_failure(q->sample2->gpu, "nvmlGpmMetricsGet");
    if (fr != NVML_SUCCESS)
        return fr;
    for (unsigned k = 0; k < q->numMetrics; k++) {
        nvmlGpmMetric_t *m = &q->metrics[k];
        m->nvmlReturn = NVML_SUCCESS;
        switch (m->metricId) {
        case NVML_GPM_METRIC_SM_UTIL:
            m->value = g->sm;
            break;
        case NVML_GPM_METRIC_SM_OCCUPANCY:
            m->value = g->smocc;
            break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
            m->value = g->dram;
            break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
            m->value = g->tensor;
            break;
        case NVML_GPM_METRIC_GRAPHICS_UTIL:
            m->value = g->gract;
            break;
        default:
            m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms)
{
    return fake_wait(set, data, ms, 1, "nvmlEventSetWait_v2");
}

#endif /* FAKE_NVML_LEGACY */
