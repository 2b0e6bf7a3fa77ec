/* CPU cost of one monitor sample per GPU: ops->sample plus ops->processes, as the
 * daemon's monitor tick calls them, for 8 GPUs through
 *   - the NVML backend on the fake libnvidia-ml.so.1 (NVML's own signals),
 *   - the same with DCGM profiling fields merged from the fake libdcgm.so.4,
 *   - the same with NVML GPM (Hopper path) instead of DCGM,
 *   - the simulated backend with 4 live processes per GPU.
 * The fakes are found next to this binary ($BUILD/bench/../fake) or in $CARMA_FAKE.
 * The fakes stat() their state file on every call, so these figures include that
 * cost and overstate the backend's own; a real driver's ioctls cost more (see
 * docs/gpu.md). Target: at most 50 us per GPU. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu/backend.h"
#include "util/clock.h"

#define NGPU 8
#define TICKS 2000

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Microseconds of CPU per GPU per tick (median of 5 runs of TICKS ticks). */
static double bench_backend(struct carma_gpu_backend *b, unsigned n)
{
    static struct carma_gpu_proc procs[CARMA_GPU_MAX_PROCS];
    double runs[5];
    for (int r = 0; r < 5; r++) {
        double c0 = cpu_s();
        for (int t = 0; t < TICKS; t++)
            for (unsigned i = 0; i < n; i++) {
                struct carma_gpu_sample s;
                if (b->ops->sample(b, i, &s) != 0) {
                    fprintf(stderr, "bench_gpu: sample failed\n");
                    exit(1);
                }
                size_t np = CARMA_GPU_MAX_PROCS;
                if (b->ops->processes)
                    b->ops->processes(b, i, procs, &np);
            }
        runs[r] = (cpu_s() - c0) / TICKS / n * 1e6;
    }
    for (int i = 1; i < 5; i++) /* insertion sort, 5 values */
        for (int j = i; j > 0 && runs[j] < runs[j - 1]; j--) {
            double x = runs[j];
            runs[j] = runs[j - 1];
            runs[j - 1] = x;
        }
    return runs[2];
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

int main(void)
{
    char exe[PATH_MAX], fake[PATH_MAX + 16], nvml[PATH_MAX + 64], dcgm[PATH_MAX + 64];
    const char *env = getenv("CARMA_FAKE");
    if (env && *env) {
        snprintf(fake, sizeof fake, "%s", env);
    } else {
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (k <= 0) {
            fprintf(stderr, "bench_gpu: cannot find myself\n");
            return 1;
        }
        exe[k] = '\0';
        snprintf(fake, sizeof fake, "%s/../fake", dirname(exe));
    }
    snprintf(nvml, sizeof nvml, "%s/nvidia-ml/libnvidia-ml.so.1", fake);
    snprintf(dcgm, sizeof dcgm, "%s/dcgm/libdcgm.so.4", fake);

    char nst[64], dst[64];
    snprintf(nst, sizeof nst, "/tmp/carma-bench-gpu-%ld.nvml", (long)getpid());
    snprintf(dst, sizeof dst, "/tmp/carma-bench-gpu-%ld.dcgm", (long)getpid());
    static char ntext[8192], dtext[4096];
    size_t nl = 0, dl = 0;
    for (int i = 0; i < NGPU; i++) {
        nl += (size_t)snprintf(ntext + nl, sizeof ntext - nl,
                               "gpu uuid=GPU-bench-%d name=\"NVIDIA H100 80GB HBM3\" "
                               "mem_total=80GiB mem_used=%dGiB util=%d mem_util=20 "
                               "power_mw=350000 power_limit_mw=700000 energy_mj=%d gpm=1 sm=40 "
                               "smocc=20 dram=30 tensor=10 gract=50\n",
                               i, 10 + i, 40 + i, 1000000 * (i + 1));
        for (int p = 0; p < 4; p++)
            nl += (size_t)snprintf(ntext + nl, sizeof ntext - nl, "proc %d pid=%d mem=2GiB\n",
                                   i, 1000 + 10 * i + p);
        dl += (size_t)snprintf(dtext + dl, sizeof dtext - dl,
                               "gpu id=%d uuid=GPU-bench-%d gract=0.5 smact=0.4 smocc=0.2 "
                               "tensor=0.1 drama=0.3\n",
                               i, i);
    }
    if (write_file(nst, ntext) || write_file(dst, dtext)) {
        fprintf(stderr, "bench_gpu: cannot write state files in /tmp\n");
        return 1;
    }
    setenv("CARMA_FAKE_NVML_STATE", nst, 1);
    setenv("CARMA_FAKE_DCGM_STATE", dst, 1);

    struct carma_err err = {{0}};
    struct carma_gpu_backend b;
    struct {
        const char *what;
        struct carma_gpu_nvml_opts o;
    } cases[] = {
        {"NVML only (memory, util, power, energy, processes)",
         {.lib = nvml, .dcgm = CARMA_GPU_SRC_OFF, .gpm = CARMA_GPU_SRC_OFF}},
        {"NVML + DCGM profiling fields 1001-1005",
         {.lib = nvml, .dcgm_lib = dcgm, .dcgm = CARMA_GPU_SRC_REQUIRE, .gpm = CARMA_GPU_SRC_OFF}},
        {"NVML + GPM metrics (Hopper path)",
         {.lib = nvml, .dcgm = CARMA_GPU_SRC_OFF, .gpm = CARMA_GPU_SRC_REQUIRE}},
    };
    printf("monitor sample CPU cost per GPU (sample + processes, %d GPUs, %d ticks, median of 5)\n",
           NGPU, TICKS);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (carma_gpu_open_nvml_opts(&b, &cases[c].o, &err)) {
            printf("  %-52s skipped: %s\n", cases[c].what, err.msg);
            continue;
        }
        double us = bench_backend(&b, NGPU);
        printf("  %-52s %7.2f us/GPU  (target <= 50: %s)\n", cases[c].what, us,
               us <= 50 ? "ok" : "MISSED");
        b.ops->close(&b);
    }
    /* The simulated backend with real (sleeping) processes attached. */
    if (carma_gpu_open_sim(&b, "8xh100-80gb", &err) == 0) {
        pid_t kids[NGPU * 4];
        int nk = 0;
        for (int i = 0; i < NGPU * 4; i++) {
            pid_t p = fork();
            if (p == 0) {
                pause();
                _exit(0);
            }
            if (p > 0) {
                kids[nk++] = p;
                b.ops->attach(&b, (unsigned)(i % NGPU), p, 2ull << 30);
            }
        }
        double us = bench_backend(&b, NGPU);
        printf("  %-52s %7.2f us/GPU\n", "sim backend, 4 live processes per GPU", us);
        for (int i = 0; i < nk; i++) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
        b.ops->close(&b);
    }
    double t0 = carma_mono_s();
    if (carma_gpu_open_nvml_opts(&b, &cases[1].o, &err) == 0) {
        printf("  open NVML + DCGM (8 GPUs): %.2f ms\n", (carma_mono_s() - t0) * 1e3);
        b.ops->close(&b);
    }
    unlink(nst);
    unlink(dst);
    return 0;
}
