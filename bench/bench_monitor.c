/* bench_monitor: the CPU cost of one monitor tick per GPU (sample, windows, process
 * list, records) through the real NVML dlopen path on the fake libnvidia-ml.so.1 with
 * GPM metrics (the fake libdcgm.so.4 loaded too when it is built, with no hostengine, as
 * on a server that does not run DCGM: bench_gpu times the DCGM path), else on the simulated
 * backend; and the store's growth per GPU per day at the default record interval
 * (10 s), measured by writing a day of records into a scratch database. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/gpu.h"
#include "daemon/monitor.h"
#include "daemon/store.h"
#include "gpu/backend.h"

#define NGPU 8

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int own_proc(void *ctx, unsigned gi, pid_t pid, uint64_t mem)
{
    (void)ctx;
    (void)gi;
    (void)mem;
    return pid % 2;
}

static int open_fake(struct carma_gpu_backend *b, const char *dir, char *state, size_t cap,
                     char *what, size_t wcap)
{
    char lib[4096], dcgm[4096];
    snprintf(lib, sizeof lib, "%s/fake/nvidia-ml/libnvidia-ml.so.1", dir);
    snprintf(dcgm, sizeof dcgm, "%s/fake/dcgm/libdcgm.so.4", dir);
    if (access(lib, R_OK) != 0)
        return -ENOENT;
    snprintf(state, cap, "/tmp/carma-bench-monitor-%d.state", (int)getpid());
    FILE *f = fopen(state, "w");
    if (!f)
        return -errno;
    fprintf(f, "driver 550.54.15\n");
    for (int g = 0; g < NGPU; g++)
        fprintf(f, "gpu uuid=GPU-bench-%d name=\"NVIDIA H100 80GB HBM3\" mem_total=80GiB "
                   "mem_used=20GiB util=60 mem_util=20 power_mw=300000 power_limit_mw=700000 "
                   "energy_mj=%d gpm=1 sm=45 smocc=25 dram=30 tensor=10\n", g, 1000000 + g);
    for (int g = 0; g < NGPU; g++)
        for (int p = 0; p < 4; p++)
            fprintf(f, "proc %d pid=%d mem=4GiB\n", g, 1000 + 10 * g + p);
    fclose(f);
    setenv("CARMA_FAKE_NVML_STATE", state, 1);
    /* The fake DCGM answers from $CARMA_FAKE_DCGM_STATE; without it there is no hostengine
     * (a server that has the library but does not run DCGM), so the signals come from GPM
     * (the description says so) whatever the caller's environment holds. */
    unsetenv("CARMA_FAKE_DCGM_STATE");
    struct carma_gpu_nvml_opts o = {.lib = lib};
    int have_dcgm = access(dcgm, R_OK) == 0;
    if (have_dcgm)
        o.dcgm_lib = dcgm;
    struct carma_err err = {{0}};
    int rc = carma_gpu_open_nvml_opts(b, &o, &err);
    if (rc) {
        fprintf(stderr, "bench_monitor: fake NVML: %s\n", err.msg);
        return rc;
    }
    char desc[256] = "nvml";
    if (b->ops->describe)
        b->ops->describe(b, desc, sizeof desc);
    snprintf(what, wcap, "fake NVML%s: %s",
             have_dcgm ? ", fake DCGM library loaded without a hostengine"
                       : " (no fake DCGM built)",
             desc);
    return 0;
}

int main(void)
{
    const char *dir = getenv("CARMA_BUILD") ? getenv("CARMA_BUILD") : "build/release";
    struct carma_gpu_backend b;
    char state[256] = "", what[512];
    int fake = open_fake(&b, dir, state, sizeof state, what, sizeof what) == 0;
    if (!fake) {
        struct carma_err err = {{0}};
        if (carma_gpu_open_sim(&b, "8xa100-40gb", &err)) {
            fprintf(stderr, "bench_monitor: %s\n", err.msg);
            return 1;
        }
        snprintf(what, sizeof what, "simulated backend (fake NVML not built under %s/fake)", dir);
    }
    unsigned n = 0;
    b.ops->count(&b, &n);
    struct carma_gpu v[CARMA_GPU_MAX];
    for (unsigned g = 0; g < n; g++)
        carma_gpu_init(&v[g], 81920, 30, CARMA_SHARING_TIMESLICE);
    struct carma_monitor m;
    struct carma_mon_hooks h = {.proc = own_proc};
    struct carma_err err = {{0}};
    if (carma_mon_init(&m, &b, v, n, NULL, &h, 10, &err)) {
        fprintf(stderr, "bench_monitor: %s\n", err.msg);
        return 1;
    }
    const int ticks = 2000;
    double t = 1e9;
    for (int i = 0; i < 50; i++) /* warm up */
        carma_mon_tick(&m, t++);
    double c0 = cpu_s();
    for (int i = 0; i < ticks; i++) {
        carma_mon_tick(&m, t++);
        const struct carma_mon_record *r;
        carma_mon_take_records(&m, &r);
    }
    double per_gpu_us = (cpu_s() - c0) / ticks / n * 1e6;
    printf("monitor tick: %.1f us CPU per GPU per tick (%u GPUs, %d ticks; %s) "
           "target <= 50 us: %s\n", per_gpu_us, n, ticks, what, per_gpu_us <= 50 ? "met" : "MISSED");
    printf("  at a 1 s interval that is %.4f%% of one core for %u GPUs\n",
           per_gpu_us * n / 1e6 * 100, n);
    carma_mon_free(&m);
    b.ops->close(&b);
    if (state[0])
        unlink(state);

    /* Store growth: one GPU, a day of records at the default 10 s interval. */
    char db[256];
    snprintf(db, sizeof db, "/tmp/carma-bench-store-%d.db", (int)getpid());
    unlink(db);
    struct carma_store *st;
    if (carma_store_open(&st, db, &err)) {
        fprintf(stderr, "bench_monitor: %s\n", err.msg);
        return 1;
    }
    int64_t gid[2];
    carma_store_begin(st, &err);
    carma_store_gpu_id(st, "GPU-bench-0", "NVIDIA H100 80GB HBM3", 81920, 700, &gid[0], &err);
    carma_store_gpu_id(st, "GPU-bench-1", "NVIDIA H100 80GB HBM3", 81920, 700, &gid[1], &err);
    carma_store_commit(st, &err);
    struct stat s0, s1;
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", db);
    stat(db, &s0);
    const int per_day = 86400 / 10;
    double w0 = cpu_s();
    for (int i = 0; i < per_day; i++) {
        if (i % 360 == 0)
            carma_store_begin(st, &err); /* carmad commits once per iteration; batch here */
        struct carma_store_sample x = {.gpu = gid[0], .t = 1.7e9 + 10.0 * i,
                                       .mem_mib = 20000 + (uint64_t)(i % 977), .util = 0.61,
                                       .smact = 0.4 + (i % 7) * 0.01, .smocc = 0.21,
                                       .drama = 0.33, .tensor = -1, .power_w = 301.5,
                                       .energy_j = 3015.0 + (i % 13)};
        carma_store_sample_insert(st, &x, &err);
        if (i % 360 == 359 || i == per_day - 1)
            carma_store_commit(st, &err);
    }
    double wsec = cpu_s() - w0;
    carma_store_close(st); /* checkpoints the WAL into the file */
    stat(db, &s1);
    double per_day_b = (double)(s1.st_size - s0.st_size);
    printf("store growth: %.0f KiB per GPU per day at the 10 s record interval (%d records, "
           "%.0f bytes each); 7 days x 8 GPUs = %.1f MiB; %.1f us CPU per record written\n",
           per_day_b / 1024, per_day, per_day_b / per_day, per_day_b * 7 * 8 / (1 << 20),
           wsec / per_day * 1e6);
    unlink(db);
    unlink(wal);
    return 0;
}
