/* gpu_probe: what carma's GPU backend sees, for checking it against nvidia-smi on a
 * real machine (not built by the Makefile; nothing here changes a GPU setting).
 *
 *   make BUILD=build/release build/release/libcarma.a
 *   cc -D_GNU_SOURCE -Isrc -O2 -o gpu_probe tests/manual/gpu_probe.c \
 *      build/release/libcarma.a -ldl -lm -lpthread
 *   ./gpu_probe [nvml|sim:SPEC|dcgm] [LIB] [--watch SECONDS] ; nvidia-smi \
 *      --query-gpu=name,uuid,memory.used,memory.total,power.draw,utilization.gpu \
 *      --format=csv ; nvidia-smi topo -m   (islands: NV#, PIX, PXB link; PHB, NODE, SYS not)
 *
 * Prints the backend's describe() line, then per GPU: info, two samples one
 * second apart (energy difference / 1 s should be close to the power), and the
 * compute processes. --watch then samples every GPU once a second for SECONDS
 * (the signals a monitor would record: GPM and DCGM values are means over the
 * second before each sample), one line per GPU and second, and ends with each
 * signal's mean per GPU. NVML is opened as carmad opens it, following critical Xid
 * events (describe() says on how many GPUs they come); any that came meanwhile are
 * printed last ("xid gpu=0 xid=13 instance=none"). Exit status 1 when the backend cannot
 * open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/backend.h"

static void sig(const char *name, double v, double scale, const char *unit)
{
    if (v < 0)
        printf(" %s=absent", name);
    else
        printf(" %s=%.3f%s", name, v * scale, unit);
}

/* Once a second for `secs` seconds: every GPU's signals, then their means. */
static void watch(struct carma_gpu_backend *b, unsigned n, int secs)
{
    enum { NSIG = 7 };
    static const char *names[NSIG] = {"util", "power", "gract", "smact", "smocc", "drama",
                                      "tensor"};
    double sum[CARMA_GPU_MAX][NSIG] = {{0}};
    int cnt[CARMA_GPU_MAX][NSIG] = {{0}};
    double peak_mib[CARMA_GPU_MAX] = {0};
    struct carma_gpu_sample s;
    for (unsigned i = 0; i < n; i++)
        b->ops->sample(b, i, &s); /* opens the first averaging interval */
    for (int t = 1; t <= secs; t++) {
        sleep(1);
        for (unsigned i = 0; i < n; i++) {
            if (b->ops->sample(b, i, &s)) {
                printf("watch t=%d gpu=%u sample failed\n", t, i);
                continue;
            }
            double v[NSIG] = {s.util_gpu, s.power_w, s.gract, s.smact, s.smocc, s.drama,
                              s.tensor};
            double used = s.mem_used_bytes / 1048576.0;
            if (used > peak_mib[i])
                peak_mib[i] = used;
            printf("watch t=%d gpu=%u used=%.0fMiB", t, i, used);
            for (int k = 0; k < NSIG; k++) {
                sig(names[k], v[k], 1, "");
                if (v[k] >= 0) {
                    sum[i][k] += v[k];
                    cnt[i][k]++;
                }
            }
            printf("\n");
        }
    }
    for (unsigned i = 0; i < n; i++) {
        printf("mean gpu=%u peak_used=%.0fMiB", i, peak_mib[i]);
        for (int k = 0; k < NSIG; k++)
            sig(names[k], cnt[i][k] ? sum[i][k] / cnt[i][k] : -1, 1, "");
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    int secs = 0;
    if (argc > 2 && !strcmp(argv[argc - 2], "--watch")) {
        secs = atoi(argv[argc - 1]);
        if (secs < 1 || secs > 3600) {
            fprintf(stderr, "gpu_probe: --watch takes 1 to 3600 seconds\n");
            return 2;
        }
        argc -= 2;
    }
    const char *which = argc > 1 ? argv[1] : "nvml";
    const char *lib = argc > 2 ? argv[2] : NULL;
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    int rc;
    struct carma_gpu_nvml_opts nvo = {.lib = lib, .xid_events = 1};
    if (!strcmp(which, "nvml"))
        rc = carma_gpu_open_nvml_opts(&b, &nvo, &err);
    else if (!strcmp(which, "dcgm"))
        rc = carma_gpu_open_dcgm(&b, lib, &err);
    else if (!strncmp(which, "sim:", 4))
        rc = carma_gpu_open_sim(&b, which + 4, &err);
    else {
        fprintf(stderr, "usage: gpu_probe [nvml|dcgm|sim:SPEC] [LIB] [--watch SECONDS]\n");
        return 2;
    }
    if (rc) {
        fprintf(stderr, "gpu_probe: %s: %s\n", which, err.msg);
        return 1;
    }
    char d[512] = "";
    if (b.ops->describe)
        b.ops->describe(&b, d, sizeof d);
    printf("backend %s: %s\n", b.ops->name, d);
    unsigned n = 0;
    b.ops->count(&b, &n);
    struct carma_gpu_sample s0[CARMA_GPU_MAX], s1;
    for (unsigned i = 0; i < n; i++)
        if (b.ops->sample(&b, i, &s0[i]))
            s0[i].energy_j = -1;
    sleep(1);
    for (unsigned i = 0; i < n; i++) {
        struct carma_gpu_info in;
        if (b.ops->info(&b, i, &in)) {
            printf("gpu %u: no info\n", i);
            continue;
        }
        printf("gpu %u: %s  %s  total=%.1f MiB  power_limit=%.1f W  mig=%d  island=%d\n", i,
               in.uuid, in.name, in.mem_total_bytes / 1048576.0, in.power_limit_w, in.mig_mode,
               in.island);
        rc = b.ops->sample(&b, i, &s1);
        if (rc) {
            printf("  sample failed: %d\n", rc);
            continue;
        }
        printf("  used=%.1f MiB free=%.1f MiB", s1.mem_used_bytes / 1048576.0,
               s1.mem_free_bytes / 1048576.0);
        sig("util", s1.util_gpu, 100, "%");
        sig("mem_util", s1.util_mem, 100, "%");
        sig("power", s1.power_w, 1, "W");
        sig("energy", s1.energy_j, 1, "J");
        if (s1.energy_j >= 0 && s0[i].energy_j >= 0)
            printf(" (%.1f W over the last second)", s1.energy_j - s0[i].energy_j);
        printf("\n ");
        sig("gract", s1.gract, 1, "");
        sig("smact", s1.smact, 1, "");
        sig("smocc", s1.smocc, 1, "");
        sig("drama", s1.drama, 1, "");
        sig("tensor", s1.tensor, 1, "");
        printf(" lost=%d\n", s1.lost);
        if (b.ops->processes) {
            struct carma_gpu_proc p[CARMA_GPU_MAX_PROCS];
            size_t np = CARMA_GPU_MAX_PROCS;
            rc = b.ops->processes(&b, i, p, &np);
            if (rc) {
                printf("  processes: error %d\n", rc);
                continue;
            }
            printf("  %zu compute processes\n", np);
            for (size_t k = 0; k < np; k++) {
                if (p[k].mem_bytes == UINT64_MAX)
                    printf("    pid %d  memory unknown\n", (int)p[k].pid);
                else
                    printf("    pid %d  %.1f MiB\n", (int)p[k].pid, p[k].mem_bytes / 1048576.0);
            }
        }
    }
    if (secs)
        watch(&b, n, secs);
    if (b.ops->xids) {
        struct carma_gpu_xid x[64];
        uint64_t lost = 0;
        size_t nx = b.ops->xids(&b, x, 64, &lost);
        for (size_t k = 0; k < nx; k++) {
            printf("xid gpu=%u xid=%llu instance=", x[k].gpu, (unsigned long long)x[k].xid);
            if (x[k].gpu_instance == UINT32_MAX)
                printf("none\n");
            else
                printf("%u\n", x[k].gpu_instance);
        }
        printf("xids: %zu taken, %llu lost\n", nx, (unsigned long long)lost);
    }
    b.ops->close(&b);
    return 0;
}
