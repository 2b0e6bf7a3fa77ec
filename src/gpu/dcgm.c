/* DCGM profiling signals through dlopen'd libdcgm.so.4 (see dcgm.h for the design).
 *
 * Session: dcgmInit, dcgmConnect_v2 to the hostengine (TCP address or unix socket,
 * 1 s timeout, watches not persisted after we disconnect), one group of all GPUs,
 * one field group for identity (UUID, name: read once) and one for the profiling
 * fields 1001-1005, watched every interval_ms, values kept max(5 s, 3 intervals).
 * Reads take the latest value of each field; a value that is blank, not a double,
 * out of 0..1 or older than max(10 s, 5 intervals) is absent. When the hostengine
 * goes away (CONNECTION_NOT_VALID), reads say -ENOTCONN and a reconnect is tried at
 * most every 10 intervals (between 1 s and 30 s). Every answer is untrusted (answer.h). */
#include "gpu/dcgm.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/answer.h"
#include "gpu/dcgm_api.h"


/* snprintf that truncates on purpose (messages), without gcc's truncation warning. */
__attribute__((format(printf, 3, 4))) static void fmt_trunc(char *buf, size_t cap,
                                                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

#define DCGM_GPU_BUF 64          /* ids the library may write; its own maximum is 32 */
#define DCGM_NPROF 5

static const unsigned short dcgm_prof_fields[DCGM_NPROF] = {
    DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY,
    DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE};

struct dcgm_syms {
    dcgm_init_fn init, shutdown;
    dcgm_error_string_fn error_string;
    dcgm_connect_v2_fn connect_v2;
    dcgm_disconnect_fn disconnect;
    dcgm_get_devices_fn get_devices;
    dcgm_group_create_fn group_create;
    dcgm_group_destroy_fn group_destroy;
    dcgm_field_group_create_fn field_group_create;
    dcgm_field_group_destroy_fn field_group_destroy;
    dcgm_watch_fields_fn watch_fields;
    dcgm_unwatch_fields_fn unwatch_fields;
    dcgm_update_all_fn update_all;
    dcgm_latest_values_fn latest;
};

struct dcgm_gpu {
    unsigned id; /* DCGM's gpuId */
    char uuid[CARMA_GPU_UUID_MAX];
    char name[CARMA_GPU_NAME_MAX];
};

struct carma_dcgm {
    void *dl;
    struct dcgm_syms f;
    int inited;
    char addr[108];
    unsigned interval_ms;
    int connected;
    dcgmHandle_t h;
    dcgmGpuGrp_t grp;
    dcgmFieldGrp_t fg_id, fg_prof;
    int have_grp, have_fg_id, have_fg_prof, watching;
    double last_try_s;
    unsigned n;
    struct dcgm_gpu g[DCGM_GPU_BUF];
    dcgmFieldValue_v1 vals[DCGM_NPROF]; /* 20 KB: kept here, not on the stack */
};

static double dcgm_now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t dcgm_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *dcgm_errstr(const struct carma_dcgm *d, dcgmReturn_t r, char *buf, size_t cap)
{
    const char *s = d->f.error_string ? d->f.error_string(r) : NULL;
    if (s)
        carma_gpu_answer_str(buf, cap, s, 80);
    else
        fmt_trunc(buf, cap, "DCGM error %d", r);
    return buf;
}

static int dcgm_errno(dcgmReturn_t r)
{
    switch (r) {
    case DCGM_ST_OK:
        return 0;
    case DCGM_ST_NOT_SUPPORTED:
    case DCGM_ST_PROFILING_NOT_SUPPORTED:
    case DCGM_ST_GPU_NOT_SUPPORTED:
    case DCGM_ST_MODULE_NOT_LOADED:
        return -ENOTSUP;
    case DCGM_ST_NO_PERMISSION:
    case DCGM_ST_REQUIRES_ROOT:
        return -EACCES;
    case DCGM_ST_CONNECTION_NOT_VALID:
        return -ENOTCONN;
    case DCGM_ST_TIMEOUT:
        return -ETIMEDOUT;
    case DCGM_ST_MEMORY:
        return -ENOMEM;
    case DCGM_ST_GPU_IS_LOST:
        return -ENODEV;
    default:
        return -EIO;
    }
}

static void dcgm_session_stop(struct carma_dcgm *d)
{
    if (d->connected) {
        if (d->watching && d->f.unwatch_fields)
            d->f.unwatch_fields(d->h, d->grp, d->fg_prof);
        if (d->have_fg_prof && d->f.field_group_destroy)
            d->f.field_group_destroy(d->h, d->fg_prof);
        if (d->have_fg_id && d->f.field_group_destroy)
            d->f.field_group_destroy(d->h, d->fg_id);
        if (d->have_grp && d->f.group_destroy)
            d->f.group_destroy(d->h, d->grp);
        d->f.disconnect(d->h);
    }
    d->connected = d->watching = d->have_grp = d->have_fg_id = d->have_fg_prof = 0;
}

/* Connects, finds the GPUs, watches the fields. 0 or a negative errno with err set. */
static int dcgm_session_start(struct carma_dcgm *d, struct carma_err *err)
{
    char eb[96];
    dcgmConnectV2Params_v2 cp = {.version = dcgmConnectV2Params_version2,
                                 .persistAfterDisconnect = 0,
                                 .timeoutMs = 1000,
                                 .addressIsUnixSocket = d->addr[0] == '/'};
    dcgmReturn_t r = d->f.connect_v2(d->addr, &cp, &d->h);
    if (r != DCGM_ST_OK)
        return carma_err_set(err, dcgm_errno(r), "DCGM: no nv-hostengine at %s: %s", d->addr,
                             dcgm_errstr(d, r, eb, sizeof eb));
    d->connected = 1;
    unsigned ids[DCGM_GPU_BUF];
    int cnt = 0;
    memset(ids, 0, sizeof ids);
    if ((r = d->f.get_devices(d->h, ids, &cnt)) != DCGM_ST_OK)
        goto fail_r;
    if (cnt < 0 || cnt > DCGM_MAX_NUM_DEVICES) /* absurd: trust nothing it wrote */
        cnt = 0;
    if (cnt == 0) {
        carma_err_set(err, -ENODEV, "DCGM at %s: no supported GPU", d->addr);
        dcgm_session_stop(d);
        return -ENODEV;
    }
    char name[64];
    fmt_trunc(name, sizeof name, "carma-%ld-%p", (long)getpid(), (void *)d);
    if ((r = d->f.group_create(d->h, DCGM_GROUP_DEFAULT, name, &d->grp)) != DCGM_ST_OK)
        goto fail_r;
    d->have_grp = 1;
    unsigned short idf[2] = {DCGM_FI_DEV_UUID, DCGM_FI_DEV_NAME};
    fmt_trunc(name, sizeof name, "carma-id-%ld-%p", (long)getpid(), (void *)d);
    if ((r = d->f.field_group_create(d->h, 2, idf, name, &d->fg_id)) != DCGM_ST_OK)
        goto fail_r;
    d->have_fg_id = 1;
    unsigned short pf[DCGM_NPROF];
    memcpy(pf, dcgm_prof_fields, sizeof pf);
    fmt_trunc(name, sizeof name, "carma-prof-%ld-%p", (long)getpid(), (void *)d);
    if ((r = d->f.field_group_create(d->h, DCGM_NPROF, pf, name, &d->fg_prof)) != DCGM_ST_OK)
        goto fail_r;
    d->have_fg_prof = 1;
    if ((r = d->f.watch_fields(d->h, d->grp, d->fg_id, 3600LL * 1000000, 7200.0, 0)) !=
        DCGM_ST_OK)
        goto fail_r;
    double keep = 3.0 * d->interval_ms / 1000;
    if ((r = d->f.watch_fields(d->h, d->grp, d->fg_prof, (long long)d->interval_ms * 1000,
                               keep < 5 ? 5 : keep, 0)) != DCGM_ST_OK) {
        carma_err_set(err, dcgm_errno(r),
                      "DCGM at %s: cannot watch profiling fields 1001-1005: %s%s", d->addr,
                      dcgm_errstr(d, r, eb, sizeof eb),
                      r == DCGM_ST_REQUIRES_ROOT ? " (nv-hostengine must run as root)" : "");
        dcgm_session_stop(d);
        return dcgm_errno(r) ? dcgm_errno(r) : -EIO;
    }
    d->watching = 1;
    d->f.update_all(d->h, 1);
    d->n = 0;
    for (int k = 0; k < cnt && d->n < DCGM_GPU_BUF; k++) {
        struct dcgm_gpu *g = &d->g[d->n];
        memset(g, 0, sizeof *g);
        g->id = ids[k];
        memset(d->vals, 0, 2 * sizeof d->vals[0]);
        d->vals[0].version = d->vals[1].version = dcgmFieldValue_version1;
        if (d->f.latest(d->h, (int)ids[k], idf, 2, d->vals) != DCGM_ST_OK)
            continue;
        for (int j = 0; j < 2; j++) {
            const dcgmFieldValue_v1 *v = &d->vals[j];
            if (v->status != DCGM_ST_OK || v->fieldType != DCGM_FT_STRING)
                continue;
            if (v->fieldId == DCGM_FI_DEV_UUID)
                carma_gpu_answer_str(g->uuid, sizeof g->uuid, v->value.str, sizeof v->value.str);
            else if (v->fieldId == DCGM_FI_DEV_NAME)
                carma_gpu_answer_str(g->name, sizeof g->name, v->value.str, sizeof v->value.str);
        }
        if (!strncmp(g->uuid, "<<<", 3)) /* DCGM's blank string markers */
            g->uuid[0] = '\0';
        if (!strncmp(g->name, "<<<", 3))
            g->name[0] = '\0';
        d->n++;
    }
    return 0;
fail_r:
    carma_err_set(err, dcgm_errno(r), "DCGM at %s: %s", d->addr, dcgm_errstr(d, r, eb, sizeof eb));
    dcgm_session_stop(d);
    return dcgm_errno(r) ? dcgm_errno(r) : -EIO;
}

void carma_dcgm_close(struct carma_dcgm *d)
{
    if (!d)
        return;
    if (d->dl) {
        dcgm_session_stop(d);
        if (d->inited && d->f.shutdown)
            d->f.shutdown();
        dlclose(d->dl);
    }
    free(d);
}

#define DCGM_SYM(d, field, name) ((d)->f.field = (__typeof__((d)->f.field))dlsym((d)->dl, name))

int carma_dcgm_open(struct carma_dcgm **out, const struct carma_dcgm_opts *o,
                    struct carma_err *err)
{
    static const struct carma_dcgm_opts defaults;
    if (!o)
        o = &defaults;
    const char *lib = o->lib ? o->lib : "libdcgm.so.4";
    const char *addr = o->addr ? o->addr : "127.0.0.1";
    *out = NULL;
    if (strlen(addr) >= sizeof((struct carma_dcgm *)0)->addr)
        return carma_err_set(err, -ENAMETOOLONG, "DCGM address too long: %.40s...", addr);
    struct carma_dcgm *d = calloc(1, sizeof *d);
    if (!d)
        return carma_err_set(err, -ENOMEM, "DCGM: out of memory");
    fmt_trunc(d->addr, sizeof d->addr, "%s", addr);
    d->interval_ms = o->interval_ms ? o->interval_ms : 1000;
    if (d->interval_ms < 10)
        d->interval_ms = 10;
    int rc;
    d->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!d->dl) {
        const char *e = dlerror();
        rc = carma_err_set(err, -ENOENT, "cannot load %s (DCGM not installed?): %.200s", lib,
                           e ? e : "dlopen failed");
        goto fail;
    }
    DCGM_SYM(d, init, "dcgmInit");
    DCGM_SYM(d, shutdown, "dcgmShutdown");
    DCGM_SYM(d, error_string, "errorString");
    DCGM_SYM(d, connect_v2, "dcgmConnect_v2");
    DCGM_SYM(d, disconnect, "dcgmDisconnect");
    DCGM_SYM(d, get_devices, "dcgmGetAllSupportedDevices");
    DCGM_SYM(d, group_create, "dcgmGroupCreate");
    DCGM_SYM(d, group_destroy, "dcgmGroupDestroy");
    DCGM_SYM(d, field_group_create, "dcgmFieldGroupCreate");
    DCGM_SYM(d, field_group_destroy, "dcgmFieldGroupDestroy");
    DCGM_SYM(d, watch_fields, "dcgmWatchFields");
    DCGM_SYM(d, unwatch_fields, "dcgmUnwatchFields");
    DCGM_SYM(d, update_all, "dcgmUpdateAllFields");
    DCGM_SYM(d, latest, "dcgmGetLatestValuesForFields");
    const char *missing = !d->f.init                 ? "dcgmInit"
                          : !d->f.connect_v2         ? "dcgmConnect_v2"
                          : !d->f.disconnect         ? "dcgmDisconnect"
                          : !d->f.get_devices        ? "dcgmGetAllSupportedDevices"
                          : !d->f.group_create       ? "dcgmGroupCreate"
                          : !d->f.field_group_create ? "dcgmFieldGroupCreate"
                          : !d->f.watch_fields       ? "dcgmWatchFields"
                          : !d->f.update_all         ? "dcgmUpdateAllFields"
                          : !d->f.latest             ? "dcgmGetLatestValuesForFields"
                                                     : NULL;
    if (missing) {
        rc = carma_err_set(err, -ENOSYS, "%s: no symbol %s: not a usable DCGM library", lib,
                           missing);
        goto fail;
    }
    char eb[96];
    dcgmReturn_t r = d->f.init();
    if (r != DCGM_ST_OK) {
        rc = carma_err_set(err, dcgm_errno(r) ? dcgm_errno(r) : -EIO, "%s: dcgmInit: %s", lib,
                           dcgm_errstr(d, r, eb, sizeof eb));
        goto fail;
    }
    d->inited = 1;
    d->last_try_s = dcgm_now_mono();
    if ((rc = dcgm_session_start(d, err)))
        goto fail;
    *out = d;
    return 0;
fail:
    carma_dcgm_close(d);
    return rc;
}

unsigned carma_dcgm_count(const struct carma_dcgm *d)
{
    return d->n;
}

const char *carma_dcgm_uuid(const struct carma_dcgm *d, unsigned k)
{
    return k < d->n ? d->g[k].uuid : "";
}

const char *carma_dcgm_name(const struct carma_dcgm *d, unsigned k)
{
    return k < d->n ? d->g[k].name : "";
}

int carma_dcgm_read(struct carma_dcgm *d, unsigned k, struct carma_dcgm_prof *out)
{
    out->gract = out->smact = out->smocc = out->tensor = out->drama = -1;
    out->lost = 0;
    if (k >= d->n)
        return -EINVAL;
    if (!d->connected) {
        double now = dcgm_now_mono();
        double wait_s = 10.0 * d->interval_ms / 1000;
        if (now - d->last_try_s < (wait_s < 1 ? 1 : wait_s > 30 ? 30 : wait_s))
            return -ENOTCONN;
        d->last_try_s = now;
        /* The same GPUs are expected back; their ids are refreshed. */
        char uuid[DCGM_GPU_BUF][CARMA_GPU_UUID_MAX];
        unsigned n0 = d->n;
        for (unsigned i = 0; i < n0; i++)
            memcpy(uuid[i], d->g[i].uuid, sizeof uuid[i]);
        struct carma_err e;
        if (dcgm_session_start(d, &e)) {
            d->n = n0;
            return -ENOTCONN;
        }
        /* Keep the caller's indices: reorder to the old UUID order where possible. */
        struct dcgm_gpu now_g[DCGM_GPU_BUF];
        unsigned nn = d->n;
        memcpy(now_g, d->g, sizeof now_g);
        for (unsigned i = 0; i < n0; i++) {
            d->g[i].id = (unsigned)-1;
            memcpy(d->g[i].uuid, uuid[i], sizeof d->g[i].uuid);
            for (unsigned j = 0; j < nn; j++)
                if (!strcmp(now_g[j].uuid, uuid[i]))
                    d->g[i] = now_g[j];
        }
        d->n = n0;
    }
    if (d->g[k].id == (unsigned)-1)
        return 0; /* that GPU did not come back */
    unsigned short f[DCGM_NPROF];
    memcpy(f, dcgm_prof_fields, sizeof f);
    for (int j = 0; j < DCGM_NPROF; j++) {
        memset(&d->vals[j], 0, offsetof(dcgmFieldValue_v1, value) + sizeof(double));
        d->vals[j].version = dcgmFieldValue_version1;
    }
    dcgmReturn_t r = d->f.latest(d->h, (int)d->g[k].id, f, DCGM_NPROF, d->vals);
    if (r == DCGM_ST_CONNECTION_NOT_VALID) {
        dcgm_session_stop(d);
        d->last_try_s = dcgm_now_mono();
        return -ENOTCONN;
    }
    if (r == DCGM_ST_GPU_IS_LOST) {
        out->lost = 1;
        return 0;
    }
    if (r != DCGM_ST_OK)
        return 0; /* nothing this time: all absent */
    double max_age_s = 5.0 * d->interval_ms / 1000;
    int64_t oldest = dcgm_now_us() - (int64_t)((max_age_s < 10 ? 10 : max_age_s) * 1e6);
    double *dst[DCGM_NPROF] = {&out->gract, &out->smact, &out->smocc, &out->tensor, &out->drama};
    for (int j = 0; j < DCGM_NPROF; j++) {
        const dcgmFieldValue_v1 *v = &d->vals[j];
        if (v->status == DCGM_ST_GPU_IS_LOST)
            out->lost = 1;
        if (v->status != DCGM_ST_OK || v->fieldType != DCGM_FT_DOUBLE || v->ts < oldest)
            continue;
        /* Match by field id: the library's order is not trusted. */
        for (int m = 0; m < DCGM_NPROF; m++)
            if (v->fieldId == dcgm_prof_fields[m])
                *dst[m] = carma_gpu_answer_ratio(v->value.dbl);
    }
    return 0;
}

void carma_dcgm_describe(const struct carma_dcgm *d, char *buf, size_t cap)
{
    if (cap)
        fmt_trunc(buf, cap, "dcgm %s (%u GPUs; fields 1001-1005 every %u ms%s)", d->addr, d->n,
                 d->interval_ms, d->connected ? "" : "; disconnected, reconnecting");
}

/* ---- DCGM as a backend of its own ---- */

static struct carma_dcgm *dcgm_of(struct carma_gpu_backend *b)
{
    return b->impl;
}

static int dcgmb_count(struct carma_gpu_backend *b, unsigned *n)
{
    *n = dcgm_of(b)->n;
    return 0;
}

static int dcgmb_info(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_info *out)
{
    struct carma_dcgm *d = dcgm_of(b);
    if (i >= d->n)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    fmt_trunc(out->uuid, sizeof out->uuid, "%s", d->g[i].uuid);
    fmt_trunc(out->name, sizeof out->name, "%s", d->g[i].name);
    out->mem_total_bytes = 0; /* DCGM here gives profiling signals only */
    out->power_limit_w = -1;
    out->mig_mode = -1;
    out->island = -1;
    return 0;
}

static int dcgmb_sample(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_sample *out)
{
    struct carma_dcgm *d = dcgm_of(b);
    if (i >= d->n)
        return -EINVAL;
    struct carma_dcgm_prof p;
    int rc = carma_dcgm_read(d, i, &p);
    memset(out, 0, sizeof *out);
    out->util_gpu = out->util_mem = out->power_w = out->energy_j = -1;
    out->gract = p.gract;
    out->smact = p.smact;
    out->smocc = p.smocc;
    out->tensor = p.tensor;
    out->drama = p.drama;
    out->lost = p.lost;
    return rc;
}

static void dcgmb_close(struct carma_gpu_backend *b)
{
    carma_dcgm_close(dcgm_of(b));
    b->impl = NULL;
    b->ops = NULL;
}

static void dcgmb_describe(struct carma_gpu_backend *b, char *buf, size_t cap)
{
    carma_dcgm_describe(dcgm_of(b), buf, cap);
}

static const struct carma_gpu_backend_ops dcgm_ops = {
    .name = "dcgm",
    .count = dcgmb_count,
    .info = dcgmb_info,
    .sample = dcgmb_sample,
    .processes = NULL,
    .attach = NULL,
    .detach = NULL,
    .close = dcgmb_close,
    .describe = dcgmb_describe,
};

int carma_gpu_open_dcgm(struct carma_gpu_backend *b, const char *lib, struct carma_err *err)
{
    struct carma_dcgm_opts o = {.lib = lib};
    struct carma_dcgm *d;
    int rc = carma_dcgm_open(&d, &o, err);
    if (rc)
        return rc;
    b->ops = &dcgm_ops;
    b->impl = d;
    return 0;
}
