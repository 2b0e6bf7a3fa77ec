/* A fake libdcgm.so.4 for tests: the DCGM subset carma uses (src/gpu/dcgm_api.h),
 * answering from a text file named by $CARMA_FAKE_DCGM_STATE, re-read when it
 * changes. Without the variable there is no hostengine to connect to.
 *
 *   hostengine up|down            down: connects and reads say CONNECTION_NOT_VALID
 *   watch OK|ERROR                what watching the profiling fields answers, e.g.
 *                                 PROFILING_NOT_SUPPORTED, REQUIRES_ROOT
 *   gpu id=0 uuid=GPU-... name="..." gract=0.5 smact=0.4 smocc=0.2 tensor=0.1
 *       drama=0.3 lost=0 age=0    (ratios 0..1; age: seconds the values are old;
 *                                  a value "blank" gives DCGM's blank marker)
 *   fail GPUID FIELD STATUS       that field's per-value status, e.g. fail 0 1003
 *                                 NOT_SUPPORTED
 *
 * For assertions, tests may dlsym these (not DCGM API): fake_dcgm_watch_usec()
 * (the profiling watch period asked for), fake_dcgm_connections() (open
 * connections), fake_dcgm_reads() (latest-value calls so far).
 * Test code: global state is fine here. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpu/dcgm_api.h"

#define EXPORT __attribute__((visibility("default")))
#define FAKE_GPUS 32
#define FAKE_FAILS 64
#define BLANK (-12345.0)

struct fake_gpu {
    unsigned id;
    char uuid[128], name[128];
    double v[5]; /* gract smact smocc tensor drama */
    int lost;
    double age;
};

static struct {
    char path[4096];
    struct stat st;
    int loaded;
    int up;
    dcgmReturn_t watch_r;
    unsigned ngpus, nfails;
    struct fake_gpu gpu[FAKE_GPUS];
    struct {
        unsigned gpu, field;
        int status;
    } fail[FAKE_FAILS];
    int inits, connections, prof_watched;
    long long watch_usec;
    long reads;
    uintptr_t next_id;
} F;

static const struct {
    const char *name;
    dcgmReturn_t r;
} fake_st[] = {
    {"OK", DCGM_ST_OK},
    {"NOT_SUPPORTED", DCGM_ST_NOT_SUPPORTED},
    {"NO_DATA", DCGM_ST_NO_DATA},
    {"NOT_WATCHED", DCGM_ST_NOT_WATCHED},
    {"NO_PERMISSION", DCGM_ST_NO_PERMISSION},
    {"GPU_IS_LOST", DCGM_ST_GPU_IS_LOST},
    {"TIMEOUT", DCGM_ST_TIMEOUT},
    {"CONNECTION_NOT_VALID", DCGM_ST_CONNECTION_NOT_VALID},
    {"REQUIRES_ROOT", DCGM_ST_REQUIRES_ROOT},
    {"MODULE_NOT_LOADED", DCGM_ST_MODULE_NOT_LOADED},
    {"PROFILING_NOT_SUPPORTED", DCGM_ST_PROFILING_NOT_SUPPORTED},
};

static int fake_st_parse(const char *s, dcgmReturn_t *r)
{
    for (size_t i = 0; i < sizeof fake_st / sizeof fake_st[0]; i++)
        if (!strcmp(s, fake_st[i].name)) {
            *r = fake_st[i].r;
            return 0;
        }
    return -1;
}

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

static void fake_load(void)
{
    const char *path = getenv("CARMA_FAKE_DCGM_STATE");
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
    F.up = 1;
    F.watch_r = DCGM_ST_OK;
    F.ngpus = F.nfails = 0;
    char line[1024];
    static const char *keys[5] = {"gract", "smact", "smocc", "tensor", "drama"};
    while (fgets(line, sizeof line, f)) {
        char *w[32];
        int n = fake_words(line, w, 32);
        if (n == 0)
            continue;
        if (!strcmp(w[0], "hostengine") && n > 1) {
            F.up = !strcmp(w[1], "up");
        } else if (!strcmp(w[0], "watch") && n > 1) {
            fake_st_parse(w[1], &F.watch_r);
        } else if (!strcmp(w[0], "gpu") && F.ngpus < FAKE_GPUS) {
            struct fake_gpu *g = &F.gpu[F.ngpus];
            memset(g, 0, sizeof *g);
            g->id = F.ngpus;
            for (int k = 0; k < 5; k++)
                g->v[k] = BLANK;
            for (int i = 1; i < n; i++) {
                char *eq = strchr(w[i], '=');
                if (!eq)
                    continue;
                *eq = '\0';
                const char *v = eq + 1;
                if (!strcmp(w[i], "id"))
                    g->id = (unsigned)strtoul(v, NULL, 10);
                else if (!strcmp(w[i], "uuid"))
                    snprintf(g->uuid, sizeof g->uuid, "%s", v);
                else if (!strcmp(w[i], "name"))
                    snprintf(g->name, sizeof g->name, "%s", v);
                else if (!strcmp(w[i], "lost"))
                    g->lost = atoi(v);
                else if (!strcmp(w[i], "age"))
                    g->age = strtod(v, NULL);
                for (int k = 0; k < 5; k++)
                    if (!strcmp(w[i], keys[k]))
                        g->v[k] = !strcmp(v, "blank") ? DCGM_FP64_BLANK : strtod(v, NULL);
            }
            F.ngpus++;
        } else if (!strcmp(w[0], "fail") && n > 3 && F.nfails < FAKE_FAILS) {
            dcgmReturn_t r;
            if (fake_st_parse(w[3], &r) == 0) {
                F.fail[F.nfails].gpu = (unsigned)strtoul(w[1], NULL, 10);
                F.fail[F.nfails].field = (unsigned)strtoul(w[2], NULL, 10);
                F.fail[F.nfails].status = r;
                F.nfails++;
            }
        }
    }
    fclose(f);
    snprintf(F.path, sizeof F.path, "%s", path);
    F.st = st;
    F.loaded = 1;
}

static int fake_up(void)
{
    fake_load();
    return F.loaded && F.up;
}

EXPORT dcgmReturn_t dcgmInit(void);
dcgmReturn_t dcgmInit(void)
{
    F.inits++;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmShutdown(void);
dcgmReturn_t dcgmShutdown(void)
{
    if (F.inits <= 0)
        return DCGM_ST_UNINITIALIZED;
    F.inits--;
    return DCGM_ST_OK;
}

EXPORT const char *errorString(dcgmReturn_t r);
const char *errorString(dcgmReturn_t r)
{
    for (size_t i = 0; i < sizeof fake_st / sizeof fake_st[0]; i++)
        if (fake_st[i].r == r)
            return fake_st[i].name;
    return "fake DCGM error";
}

EXPORT dcgmReturn_t dcgmConnect_v2(const char *addr, dcgmConnectV2Params_v2 *p, dcgmHandle_t *h);
dcgmReturn_t dcgmConnect_v2(const char *addr, dcgmConnectV2Params_v2 *p, dcgmHandle_t *h)
{
    if (F.inits <= 0)
        return DCGM_ST_UNINITIALIZED;
    if (!addr || !p || !h)
        return DCGM_ST_BADPARAM;
    if (p->version != dcgmConnectV2Params_version2)
        return DCGM_ST_VER_MISMATCH;
    if (p->addressIsUnixSocket != (addr[0] == '/'))
        return DCGM_ST_BADPARAM;
    if (!fake_up())
        return DCGM_ST_CONNECTION_NOT_VALID;
    *h = 0x1000 + ++F.next_id;
    F.connections++;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmDisconnect(dcgmHandle_t h);
dcgmReturn_t dcgmDisconnect(dcgmHandle_t h)
{
    (void)h;
    if (F.connections <= 0)
        return DCGM_ST_BADPARAM;
    F.connections--;
    F.prof_watched = 0;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t h, unsigned *ids, int *count);
dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t h, unsigned *ids, int *count)
{
    (void)h;
    if (!fake_up())
        return DCGM_ST_CONNECTION_NOT_VALID;
    int n = 0;
    for (unsigned i = 0; i < F.ngpus && n < DCGM_MAX_NUM_DEVICES; i++)
        ids[n++] = F.gpu[i].id;
    *count = n;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmGroupCreate(dcgmHandle_t h, dcgmGroupType_t t, const char *name,
                                    dcgmGpuGrp_t *g);
dcgmReturn_t dcgmGroupCreate(dcgmHandle_t h, dcgmGroupType_t t, const char *name,
                             dcgmGpuGrp_t *g)
{
    (void)h;
    if (!fake_up())
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (t != DCGM_GROUP_DEFAULT || !name || !*name)
        return DCGM_ST_BADPARAM;
    *g = ++F.next_id;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t h, dcgmGpuGrp_t g);
dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t h, dcgmGpuGrp_t g)
{
    (void)h;
    (void)g;
    return DCGM_ST_OK;
}

/* Field groups: remembered so that a watch knows whether it is the profiling one. */
static unsigned short fg_fields[64][8];
static int fg_n[64];

EXPORT dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int n, unsigned short *ids,
                                         const char *name, dcgmFieldGrp_t *fg);
dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int n, unsigned short *ids, const char *name,
                                  dcgmFieldGrp_t *fg)
{
    (void)h;
    if (!fake_up())
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (n <= 0 || n > 8 || !name || !*name)
        return DCGM_ST_BADPARAM;
    uintptr_t id = ++F.next_id;
    memcpy(fg_fields[id % 64], ids, (size_t)n * sizeof *ids);
    fg_n[id % 64] = n;
    *fg = id;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t h, dcgmFieldGrp_t fg);
dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t h, dcgmFieldGrp_t fg)
{
    (void)h;
    (void)fg;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t fg,
                                    long long usec, double age, int samples);
dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t fg, long long usec,
                             double age, int samples)
{
    (void)h;
    (void)g;
    if (!fake_up())
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (usec <= 0 || (age <= 0 && samples <= 0))
        return DCGM_ST_BADPARAM;
    int prof = fg_n[fg % 64] > 0 && fg_fields[fg % 64][0] >= 1000;
    if (prof) {
        if (F.watch_r != DCGM_ST_OK)
            return F.watch_r;
        F.prof_watched = 1;
        F.watch_usec = usec;
    }
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t fg);
dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t fg)
{
    (void)h;
    (void)g;
    (void)fg;
    F.prof_watched = 0;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t h, int wait);
dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t h, int wait)
{
    (void)h;
    (void)wait;
    return fake_up() ? DCGM_ST_OK : DCGM_ST_CONNECTION_NOT_VALID;
}

EXPORT dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t h, int gpu, unsigned short *fields,
                                                 unsigned count, dcgmFieldValue_v1 *vals);
dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t h, int gpu, unsigned short *fields,
                                          unsigned count, dcgmFieldValue_v1 *vals)
{
    (void)h;
    F.reads++;
    if (!fake_up())
        return DCGM_ST_CONNECTION_NOT_VALID;
    struct fake_gpu *g = NULL;
    for (unsigned i = 0; i < F.ngpus; i++)
        if ((int)F.gpu[i].id == gpu)
            g = &F.gpu[i];
    if (!g)
        return DCGM_ST_BADPARAM;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    for (unsigned k = 0; k < count; k++) {
        dcgmFieldValue_v1 *v = &vals[k];
        if (v->version != dcgmFieldValue_version1)
            return DCGM_ST_VER_MISMATCH;
        v->fieldId = fields[k];
        v->status = DCGM_ST_OK;
        v->ts = now - (int64_t)(g->age * 1e6);
        if (fields[k] == DCGM_FI_DEV_UUID || fields[k] == DCGM_FI_DEV_NAME) {
            v->fieldType = DCGM_FT_STRING;
            snprintf(v->value.str, sizeof v->value.str, "%s",
                     fields[k] == DCGM_FI_DEV_UUID ? g->uuid : g->name);
        } else if (fields[k] >= DCGM_FI_PROF_GR_ENGINE_ACTIVE &&
                   fields[k] <= DCGM_FI_PROF_DRAM_ACTIVE) {
            v->fieldType = DCGM_FT_DOUBLE;
            double x = g->v[fields[k] - DCGM_FI_PROF_GR_ENGINE_ACTIVE];
            v->value.dbl = x == BLANK ? DCGM_FP64_BLANK : x;
            if (!F.prof_watched)
                v->status = DCGM_ST_NOT_WATCHED;
        } else {
            v->fieldType = DCGM_FT_INT64;
            v->status = DCGM_ST_UNKNOWN_FIELD;
        }
        if (g->lost)
            v->status = DCGM_ST_GPU_IS_LOST;
        for (unsigned i = 0; i < F.nfails; i++)
            if (F.fail[i].gpu == g->id && F.fail[i].field == fields[k])
                v->status = F.fail[i].status;
    }
    return DCGM_ST_OK;
}

/* Test introspection (not DCGM API). */
EXPORT long long fake_dcgm_watch_usec(void);
long long fake_dcgm_watch_usec(void)
{
    return F.watch_usec;
}

EXPORT int fake_dcgm_connections(void);
int fake_dcgm_connections(void)
{
    return F.connections;
}

EXPORT long fake_dcgm_reads(void);
long fake_dcgm_reads(void)
{
    return F.reads;
}
