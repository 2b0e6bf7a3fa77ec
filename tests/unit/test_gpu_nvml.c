/* The NVML backend against the fake libnvidia-ml.so.1 ($CARMA_FAKE/nvidia-ml),
 * loaded through the real dlopen path: facts, samples, processes, and the failures
 * a real driver gives (NOT_SUPPORTED, GPU_IS_LOST, timeouts, no driver, absurd or
 * unterminated answers, an older memory struct version). Skipped without CARMA_FAKE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "gpu/backend.h"
#include "unit/gpu_fake.h"
#include "util/clock.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

struct fx {
    char lib[4096];
    char state[256];
};

static int setup(void **state)
{
    static struct fx f;
    if (!gpu_fake_lib(f.lib, sizeof f.lib, "nvidia-ml/libnvidia-ml.so.1"))
        return 0; /* tests skip */
    gpu_fake_state_path(f.state, sizeof f.state, "CARMA_FAKE_NVML_STATE", "nvml");
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f) {
        unlink(f->state);
        setenv("CARMA_FAKE_NVML_STATE", f->state, 1);
    }
    return 0;
}

#define FIXTURE(st)                                                                              \
    struct fx *f = *(st);                                                                        \
    if (!f)                                                                                      \
        skip();

static const char *TWO =
    "driver 550.54.15\n"
    "gpu uuid=GPU-aaaa name=\"NVIDIA A100-SXM4-40GB\" mem_total=40960MiB mem_used=3GiB "
    "mem_reserved=512MiB util=37 mem_util=12 power_mw=61500 power_limit_mw=400000 "
    "energy_mj=123456789 pci=00000000:00:06.0\n"
    "gpu uuid=GPU-bbbb name=\"NVIDIA H100 80GB HBM3\" mem_total=80GiB mem_used=0 util=0 "
    "power_mw=70000 power_limit_mw=700000 energy_mj=5 mig=1\n"
    "proc 0 pid=1234 mem=1GiB\n"
    "proc 0 pid=1235 mem=unknown\n"
    "proc 0 pid=1234 mem=512MiB\n" /* the same process in a second MIG instance */
    "proc 1 pid=777 mem=2GiB\n";

static void open_ok(struct fx *f, struct carma_gpu_backend *b, const char *text)
{
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = f->lib, .dcgm = CARMA_GPU_SRC_OFF};
    int rc = carma_gpu_open_nvml_opts(b, &o, &err);
    if (rc)
        fail_msg("open: %d %s", rc, err.msg);
}

static void test_info(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, TWO);
    assert_string_equal(b.ops->name, "nvml");
    unsigned n = 0;
    assert_int_equal(b.ops->count(&b, &n), 0);
    assert_int_equal(n, 2);
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_string_equal(in.uuid, "GPU-aaaa");
    assert_string_equal(in.name, "NVIDIA A100-SXM4-40GB");
    assert_int_equal(in.mem_total_bytes, 40960 * MiB);
    assert_float_equal(in.power_limit_w, 400, 1e-9);
    assert_int_equal(in.mig_mode, 0);
    assert_string_equal(in.pci_bus_id, "00000000:00:06.0"); /* nvmlDeviceGetPciInfo_v3 */
    assert_int_equal(b.ops->info(&b, 1, &in), 0);
    assert_string_equal(in.uuid, "GPU-bbbb");
    assert_string_equal(in.pci_bus_id, ""); /* NOT_SUPPORTED: unknown */
    assert_int_equal(in.mig_mode, 1);
    assert_int_equal(in.island, -1); /* no topology answer: unknown */
    assert_int_equal(b.ops->info(&b, 2, &in), -EINVAL);
    assert_null(b.ops->attach);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "nvml 550.54.15"));
    assert_non_null(strstr(d, "nvmlInit_v2"));
    assert_non_null(strstr(d, "nvmlDeviceGetComputeRunningProcesses_v3"));
    assert_non_null(strstr(d, "memory v2"));
    assert_non_null(strstr(d, "utilisation only"));
    b.ops->close(&b);
}

static void test_sample(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, TWO);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    /* v2: used excludes the reserved 512 MiB; free = total - reserved - used. */
    assert_int_equal(s.mem_used_bytes, 3 * GiB);
    assert_int_equal(s.mem_free_bytes, 40960 * MiB - 3 * GiB - 512 * MiB);
    assert_float_equal(s.util_gpu, 0.37, 1e-12);
    assert_float_equal(s.util_mem, 0.12, 1e-12);
    assert_float_equal(s.power_w, 61.5, 1e-12);
    assert_float_equal(s.energy_j, 123456.789, 1e-6);
    assert_true(s.smact < 0 && s.smocc < 0 && s.drama < 0 && s.tensor < 0 && s.gract < 0);
    assert_int_equal(s.lost, 0);
    /* The state changes under the open backend: the next sample sees it. */
    assert_int_equal(gpu_fake_write(f->state,
                                    "gpu uuid=GPU-aaaa mem_total=40960MiB mem_used=10GiB "
                                    "util=100 power_mw=300000 energy_mj=123999999\n"
                                    "gpu uuid=GPU-bbbb mem_total=80GiB\n"),
                     0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.mem_used_bytes, 10 * GiB);
    assert_float_equal(s.util_gpu, 1.0, 1e-12);
    assert_float_equal(s.power_w, 300, 1e-12);
    assert_float_equal(s.energy_j, 123999.999, 1e-6);
    assert_int_equal(b.ops->sample(&b, 2, &s), -EINVAL);
    b.ops->close(&b);
}

static void test_processes(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, TWO);
    struct carma_gpu_proc p[8];
    size_t n = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(p[0].pid, 1234);
    assert_int_equal(p[0].mem_bytes, 1536 * MiB); /* two MIG instances, summed */
    assert_int_equal(p[1].pid, 1235);
    assert_int_equal(p[1].mem_bytes, UINT64_MAX); /* the driver cannot tell */
    n = 8;
    assert_int_equal(b.ops->processes(&b, 1, p, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].pid, 777);
    assert_int_equal(p[0].mem_bytes, 2 * GiB);
    n = 1;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -EOVERFLOW);
    assert_int_equal(n, 1);
    b.ops->close(&b);
}

/* Under MPS the compute list holds the MPS server and each client is in the MPS list
 * only: both are read, a pid in both once, at its larger figure. */
static void test_mps_clients(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    const char *mps = "gpu uuid=GPU-a mem_total=40GiB\n"
                      "proc 0 pid=100 mem=300MiB\n"     /* nvidia-cuda-mps-server */
                      "proc 0 pid=200 mem=5GiB mps=1\n" /* two clients */
                      "proc 0 pid=201 mem=unknown mps=1\n"
                      "proc 0 pid=100 mem=200MiB mps=1\n"; /* listed in both */
    open_ok(f, &b, mps);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "nvmlDeviceGetComputeRunningProcesses_v3 and the MPS list"));
    struct carma_gpu_proc p[8];
    size_t n = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(p[0].pid, 100);
    assert_int_equal(p[0].mem_bytes, 300 * MiB);
    assert_int_equal(p[1].pid, 200);
    assert_int_equal(p[1].mem_bytes, 5 * GiB);
    assert_int_equal(p[2].pid, 201);
    assert_int_equal(p[2].mem_bytes, UINT64_MAX);
    n = 2; /* more than the caller holds: the first ones, and said */
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -EOVERFLOW);
    assert_int_equal(n, 2);
    b.ops->close(&b);
    /* an MPS list that fails for now fails the list (the clients' memory is unknown) */
    char text[1024];
    snprintf(text, sizeof text, "%sfail 0 nvmlDeviceGetMPSComputeRunningProcesses_v3 TIMEOUT\n",
             mps);
    open_ok(f, &b, text);
    n = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -ETIMEDOUT);
    b.ops->close(&b);
    /* a list that does not fit NVML's buffer (INSUFFICIENT_SIZE, nothing written): said,
     * and what out holds is what was read, never what the call did not write */
    snprintf(text, sizeof text,
             "%sfail 0 nvmlDeviceGetMPSComputeRunningProcesses_v3 INSUFFICIENT_SIZE\n", mps);
    open_ok(f, &b, text);
    n = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -EOVERFLOW);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].pid, 100);
    b.ops->close(&b);
    snprintf(text, sizeof text,
             "%sfail 0 nvmlDeviceGetComputeRunningProcesses_v3 INSUFFICIENT_SIZE\n", mps);
    open_ok(f, &b, text);
    n = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -EOVERFLOW);
    assert_int_equal(n, 0);
    b.ops->close(&b);
    /* one the GPU does not have: the compute list is all, from then on */
    snprintf(text, sizeof text,
             "%sfail 0 nvmlDeviceGetMPSComputeRunningProcesses_v3 NOT_SUPPORTED\n", mps);
    open_ok(f, &b, text);
    for (int k = 0; k < 2; k++) {
        n = 8;
        assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(p[0].pid, 100);
    }
    b.ops->close(&b);
}

static void test_not_supported_is_absent(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, "gpu uuid=GPU-a mem_total=1GiB util=50 power_mw=1000 energy_mj=7\n"
                   "fail 0 nvmlDeviceGetPowerUsage NOT_SUPPORTED\n"
                   "fail 0 nvmlDeviceGetTotalEnergyConsumption NO_PERMISSION\n"
                   "fail 0 nvmlDeviceGetUtilizationRates TIMEOUT\n"
                   "fail 0 nvmlDeviceGetComputeRunningProcesses_v3 NOT_SUPPORTED\n");
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_true(s.power_w < 0);
    assert_true(s.energy_j < 0);
    assert_true(s.util_gpu < 0); /* a timeout: absent this time */
    assert_int_equal(s.mem_used_bytes, 0);
    assert_int_equal(s.lost, 0);
    struct carma_gpu_proc p[4];
    size_t n = 4;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -ENOTSUP);
    /* Failures gone: utilisation is back; NOT_SUPPORTED signals are not asked again. */
    assert_int_equal(gpu_fake_write(f->state, "gpu uuid=GPU-a mem_total=1GiB util=50 "
                                              "power_mw=1000 energy_mj=7\n"),
                     0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.util_gpu, 0.5, 1e-12);
    assert_true(s.power_w < 0);
    assert_true(s.energy_j < 0);
    b.ops->close(&b);
}

static void test_gpu_lost_drains(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, TWO);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_int_equal(gpu_fake_write(f->state, "gpu uuid=GPU-aaaa mem_total=40960MiB util=5\n"
                                              "gpu uuid=GPU-bbbb mem_total=80GiB lost=1\n"),
                     0);
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_int_equal(s.lost, 1);
    assert_true(s.util_gpu < 0 && s.power_w < 0 && s.energy_j < 0);
    assert_int_equal(s.mem_free_bytes, 80 * GiB); /* the last figures known */
    struct carma_gpu_proc p[4];
    size_t n = 4;
    assert_int_equal(b.ops->processes(&b, 1, p, &n), -ENODEV);
    /* Lost stays lost (a reset is needed), even if the GPU answers again. */
    assert_int_equal(gpu_fake_write(f->state, TWO), 0);
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_int_equal(s.lost, 1);
    /* The other GPU is unaffected. */
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.lost, 0);
    assert_float_equal(s.util_gpu, 0.37, 1e-12);
    b.ops->close(&b);
}

static void test_lost_by_one_call(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, "gpu uuid=GPU-a mem_total=1GiB\n"
                   "fail 0 nvmlDeviceGetPowerUsage GPU_IS_LOST\n");
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.lost, 1);
    b.ops->close(&b);
}

static void test_memory_error_fails_sample(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, TWO);
    assert_int_equal(gpu_fake_write(f->state, "gpu uuid=GPU-aaaa mem_total=1GiB\n"
                                              "gpu uuid=GPU-bbbb mem_total=1GiB\n"
                                              "fail 0 nvmlDeviceGetMemoryInfo_v2 TIMEOUT\n"),
                     0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), -ETIMEDOUT);
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    b.ops->close(&b);
}

static void test_memory_v2_falls_back_to_v1(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, "gpu uuid=GPU-a mem_total=10GiB mem_used=1GiB mem_reserved=1GiB\n"
                   "fail * nvmlDeviceGetMemoryInfo_v2 ARGUMENT_VERSION_MISMATCH\n");
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_int_equal(in.mem_total_bytes, 10 * GiB);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.mem_used_bytes, 2 * GiB); /* v1 counts reserved as used */
    assert_int_equal(s.mem_free_bytes, 8 * GiB);
    b.ops->close(&b);
}

static void test_skips_unusable_gpus(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, "gpu uuid=GPU-a mem_total=1GiB lost=1\n"
                   "gpu uuid=GPU-b mem_total=2GiB\n"
                   "gpu uuid=GPU-c mem_total=3GiB\n"
                   "fail 2 nvmlDeviceGetUUID NO_PERMISSION\n");
    unsigned n = 0;
    assert_int_equal(b.ops->count(&b, &n), 0);
    assert_int_equal(n, 1);
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_string_equal(in.uuid, "GPU-b");
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "2 GPUs skipped"));
    assert_non_null(strstr(d, "GPU_IS_LOST"));
    b.ops->close(&b);
    /* Two GPUs that answer one UUID: jobs reach GPUs by UUID (CUDA_VISIBLE_DEVICES), so
     * both would land on whichever the UUID names; the second is skipped. */
    open_ok(f, &b,
            "gpu uuid=GPU-a mem_total=1GiB\n"
            "gpu uuid=GPU-a mem_total=2GiB\n"
            "gpu uuid=GPU-c mem_total=3GiB\n");
    assert_int_equal(b.ops->count(&b, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_string_equal(in.uuid, "GPU-a");
    assert_int_equal(in.mem_total_bytes, 1 * GiB);
    assert_int_equal(b.ops->info(&b, 1, &in), 0);
    assert_string_equal(in.uuid, "GPU-c");
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "1 GPU skipped: GPU 1 (GPU-a): an earlier GPU's UUID too"));
    b.ops->close(&b);
}

static void test_absurd_answers_bounded(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    /* NVML claims 100000 GPUs and 5000 processes, and strings without a NUL. */
    open_ok(f, &b,
            "count 100000\nprocs_count 5000\nuuid_no_nul 1\n"
            "gpu uuid=GPU-a\x01z mem_total=1GiB util=250 power_mw=4000000000 "
            "pci=00000000:00:06.0\n"
            "proc 0 pid=1 mem=1\n");
    unsigned n = 0;
    assert_int_equal(b.ops->count(&b, &n), 0);
    assert_int_equal(n, 1);
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_true(strlen(in.uuid) < sizeof in.uuid);
    assert_int_equal(strncmp(in.uuid, "GPU-a?z", 7), 0);
    for (const char *c = in.uuid; *c; c++)
        assert_true(*c >= 0x20 && *c < 0x7f);
    assert_true(strlen(in.name) < sizeof in.name);
    /* a bus id filling its 32 bytes without a NUL: cut to the field */
    assert_int_equal(strlen(in.pci_bus_id), sizeof in.pci_bus_id - 1);
    assert_int_equal(strspn(in.pci_bus_id, "X"), sizeof in.pci_bus_id - 1);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_true(s.util_gpu < 0); /* 250 % is not a figure */
    assert_true(s.power_w < 0);  /* 4 MW neither */
    struct carma_gpu_proc p[8];
    size_t pn = 8;
    /* The fake claims 5000 records for a buffer of 1024: INSUFFICIENT_SIZE. */
    assert_int_equal(b.ops->processes(&b, 0, p, &pn), -EOVERFLOW);
    b.ops->close(&b);
    /* Success with a count above what it wrote: older records must not come back,
     * pid 0 and impossible pids are dropped. */
    open_ok(f, &b, "gpu uuid=GPU-a mem_total=1GiB\n"
                   "proc 0 pid=11 mem=1\nproc 0 pid=12 mem=1\nproc 0 pid=13 mem=1\n");
    pn = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &pn), 0);
    assert_int_equal(pn, 3);
    assert_int_equal(gpu_fake_write(f->state, "procs_count 1000\n"
                                              "gpu uuid=GPU-a mem_total=1GiB\n"
                                              "proc 0 pid=21 mem=5\nproc 0 pid=0 mem=1\n"
                                              "proc 0 pid=99999999 mem=1\n"),
                     0);
    pn = 8;
    assert_int_equal(b.ops->processes(&b, 0, p, &pn), 0);
    assert_int_equal(pn, 1);
    assert_int_equal(p[0].pid, 21);
    assert_int_equal(p[0].mem_bytes, 5);
    b.ops->close(&b);
}

static void test_gpm_signals(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_ok(f, &b, "gpu uuid=GPU-h mem_total=80GiB gpm=1 sm=42 smocc=21 dram=33 tensor=7 "
                   "gract=50\n"
                   "gpu uuid=GPU-a mem_total=40GiB gpm=0\n");
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "GPM on 1 of 2 GPUs"));
    struct carma_gpu_sample s;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(b.ops->sample(&b, 0, &s), 0);
        assert_float_equal(s.smact, 0.42, 1e-12);
        assert_float_equal(s.smocc, 0.21, 1e-12);
        assert_float_equal(s.drama, 0.33, 1e-12);
        assert_float_equal(s.tensor, 0.07, 1e-12);
        assert_float_equal(s.gract, 0.50, 1e-12);
    }
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_true(s.smact < 0);
    /* GPM off by request. */
    b.ops->close(&b);
    struct carma_gpu_nvml_opts o = {
        .lib = f->lib, .dcgm = CARMA_GPU_SRC_OFF, .gpm = CARMA_GPU_SRC_OFF};
    struct carma_err err;
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_true(s.smact < 0);
    b.ops->close(&b);
    /* GPM required but one GPU lacks it: the open fails and says so. */
    o.gpm = CARMA_GPU_SRC_REQUIRE;
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), -ENOTSUP);
    assert_non_null(strstr(err.msg, "GPM"));
}

static void test_no_driver(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    unsetenv("CARMA_FAKE_NVML_STATE");
    assert_int_equal(carma_gpu_open_nvml(&b, f->lib, &err), -ENXIO);
    assert_non_null(strstr(err.msg, "DRIVER_NOT_LOADED"));
    setenv("CARMA_FAKE_NVML_STATE", f->state, 1);
    assert_int_equal(gpu_fake_write(f->state, "init LIB_RM_VERSION_MISMATCH\n"), 0);
    assert_int_equal(carma_gpu_open_nvml(&b, f->lib, &err), -EPROTO);
    assert_non_null(strstr(err.msg, "nvmlInit_v2"));
    assert_int_equal(gpu_fake_write(f->state, "driver 1\n"), 0);
    assert_int_equal(carma_gpu_open_nvml(&b, f->lib, &err), -ENODEV);
    assert_non_null(strstr(err.msg, "no usable GPU"));
    assert_int_equal(carma_gpu_open_nvml(&b, "/nonexistent/libnvidia-ml.so.1", &err), -ENOENT);
    assert_non_null(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1"));
}

static void test_not_an_nvml_library(void **state)
{
    FIXTURE(state);
    char other[4096];
    if (!gpu_fake_lib(other, sizeof other, "dcgm/libdcgm.so.4"))
        skip();
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    assert_int_equal(carma_gpu_open_nvml(&b, other, &err), -ENOSYS);
    assert_non_null(strstr(err.msg, "no symbol nvmlInit_v2"));
}

static void test_reopen_many_times(void **state)
{
    FIXTURE(state);
    /* init/shutdown balanced, no leak across opens (ASan checks the rest). */
    for (int k = 0; k < 50; k++) {
        struct carma_gpu_backend b;
        open_ok(f, &b, TWO);
        struct carma_gpu_sample s;
        assert_int_equal(b.ops->sample(&b, 0, &s), 0);
        b.ops->close(&b);
    }
}

/* ngpus GPUs (GPU-0, GPU-1, ...), then `extra` (topology, nvlink and fail lines). */
static void open_gpus(struct fx *f, struct carma_gpu_backend *b, unsigned ngpus, const char *extra)
{
    char text[4096] = "";
    size_t len = 0;
    for (unsigned i = 0; i < ngpus; i++)
        len +=
            (size_t)snprintf(text + len, sizeof text - len, "gpu uuid=GPU-%u mem_total=40GiB\n", i);
    snprintf(text + len, sizeof text - len, "%s", extra);
    open_ok(f, b, text);
}

/* Each GPU's island is want[i] (n GPUs). */
static void check_islands(struct carma_gpu_backend *b, const int *want, unsigned n)
{
    unsigned got_n = 0;
    assert_int_equal(b->ops->count(b, &got_n), 0);
    assert_int_equal(got_n, n);
    for (unsigned i = 0; i < n; i++) {
        struct carma_gpu_info in;
        assert_int_equal(b->ops->info(b, i, &in), 0);
        if (in.island != want[i])
            fail_msg("GPU %u: island %d, want %d", i, in.island, want[i]);
    }
}

/* NVLink pairs (nvmlDeviceGetP2PStatus, NVLINK index, status OK) share an island;
 * worked out once at open: a GPU lost later, or a driver that answers otherwise
 * later, changes no island. */
static void test_islands_nvlink(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_gpus(f, &b, 4, "nvlink 0 1\nnvlink 3 2\n");
    check_islands(&b, (const int[]){0, 0, 1, 1}, 4);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "4 GPUs in 2 islands)"));
    assert_int_equal(gpu_fake_write(f->state, "gpu uuid=GPU-0 mem_total=40GiB\n"
                                              "gpu uuid=GPU-1 mem_total=40GiB lost=1\n"
                                              "gpu uuid=GPU-2 mem_total=40GiB\n"
                                              "gpu uuid=GPU-3 mem_total=40GiB\n"),
                     0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_int_equal(s.lost, 1);
    check_islands(&b, (const int[]){0, 0, 1, 1}, 4);
    b.ops->close(&b);
    /* a status other than OK (NOT_SUPPORTED, or one NVML does not have) links nothing */
    open_gpus(f, &b, 4, "nvlink 0 1 5\nnvlink 2 3 7\nnvlink 0 3 4294967295\n");
    check_islands(&b, (const int[]){0, 1, 2, 3}, 4);
    b.ops->close(&b);
}

/* PCIe: one board, one switch or several (no host bridge between) link; a host bridge,
 * a NUMA node or the system do not. Islands are connected components (a chain is one
 * island), numbered by their lowest GPU index. */
static void test_islands_pcie(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_gpus(f, &b, 4,
              "topology 0 2 SINGLE\ntopology 1 3 MULTIPLE\ntopology 0 1 HOSTBRIDGE\n"
              "topology 0 3 NODE\ntopology 1 2 SYSTEM\ntopology 2 3 HOSTBRIDGE\n");
    check_islands(&b, (const int[]){0, 1, 0, 1}, 4);
    b.ops->close(&b);
    open_gpus(f, &b, 4, "topology 0 1 INTERNAL\ntopology 2 3 30\n");
    check_islands(&b, (const int[]){0, 0, 1, 2}, 4);
    b.ops->close(&b);
    /* 1-4 and 4-2 make {1, 2, 4} one island, though 1-2 go through a host bridge;
     * GPU 3 is the third island; the pairs without a line answer NOT_SUPPORTED */
    open_gpus(f, &b, 5,
              "topology 1 2 HOSTBRIDGE\ntopology 4 1 SINGLE\ntopology 2 4 MULTIPLE\n"
              "topology 0 3 SYSTEM\n");
    check_islands(&b, (const int[]){0, 1, 1, 2, 1}, 5);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "5 GPUs in 3 islands)"));
    b.ops->close(&b);
    /* NVLink or PCIe: either links */
    open_gpus(f, &b, 4, "nvlink 0 3\ntopology 1 3 SINGLE\ntopology 0 2 SYSTEM\n");
    check_islands(&b, (const int[]){0, 0, 1, 0}, 4);
    b.ops->close(&b);
    /* one GPU is island 0 */
    open_gpus(f, &b, 1, "");
    check_islands(&b, (const int[]){0}, 1);
    b.ops->close(&b);
}

/* Levels NVML does not have (between or past the known ones) link nothing. */
static void test_islands_level_out_of_range(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    open_gpus(f, &b, 4,
              "topology 0 1 15\ntopology 1 2 5\ntopology 2 3 4294967295\n"
              "topology 0 3 0x80000000\ntopology 0 2 SYSTEM\n");
    check_islands(&b, (const int[]){0, 1, 2, 3}, 4);
    b.ops->close(&b);
}

/* Unknown (-1 on every GPU): the driver answers no pair (NOT_SUPPORTED everywhere), or a
 * pair's two calls both fail. One call failing, or a GPU lost, is no link. */
static void test_islands_unknown(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    char d[512];
    open_gpus(f, &b, 3, "");
    check_islands(&b, (const int[]){-1, -1, -1}, 3);
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "3 GPUs, islands unknown (the driver answered no topology call"));
    b.ops->close(&b);
    open_gpus(f, &b, 3,
              "topology 0 1 SINGLE\nfail 2 nvmlDeviceGetP2PStatus UNKNOWN\n"
              "fail 2 nvmlDeviceGetTopologyCommonAncestor TIMEOUT\n");
    check_islands(&b, (const int[]){-1, -1, -1}, 3);
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "islands unknown (GPUs 0 and 2: TIMEOUT)"));
    b.ops->close(&b);
    /* one of the two failing: the other's answer holds */
    open_gpus(f, &b, 3,
              "topology 0 1 HOSTBRIDGE\nnvlink 0 2\n"
              "fail 2 nvmlDeviceGetTopologyCommonAncestor UNKNOWN\n");
    check_islands(&b, (const int[]){0, 1, 0}, 3);
    b.ops->close(&b);
    open_gpus(f, &b, 3, "topology 0 1 SINGLE\nfail * nvmlDeviceGetP2PStatus TIMEOUT\n");
    check_islands(&b, (const int[]){0, 0, 1}, 3);
    b.ops->close(&b);
    /* a GPU lost before the calls: no link (it is drained, its island matters not) */
    open_gpus(f, &b, 3,
              "nvlink 0 1\nfail 2 nvmlDeviceGetP2PStatus GPU_IS_LOST\n"
              "fail 2 nvmlDeviceGetTopologyCommonAncestor GPU_IS_LOST\n");
    check_islands(&b, (const int[]){0, 0, 1}, 3);
    b.ops->close(&b);
}

/* Waits (up to ms) for the Xid descriptor to poll readable; 1 when it did. */
static int xid_ready(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Takes Xids until n came or 30 s passed; returns how many. */
static size_t xid_take(struct carma_gpu_backend *b, int fd, struct carma_gpu_xid *x, size_t n)
{
    size_t got = 0;
    for (double w0 = carma_mono_s(); got < n && carma_mono_s() - w0 < 30;)
        if (xid_ready(fd, 100))
            got += b->ops->xids(b, x + got, n - got, NULL);
    return got;
}

/* Waits, 60 s at most, until the backend's Xid thread took every Xid line of the fake's
 * state (read by the last call outside the event API) and queued it: the fake's waits then
 * find none left to hand out. */
static void xids_all_taken(const struct fx *f)
{
    void *h = dlopen(f->lib, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    unsigned long (*idle)(void) = (unsigned long (*)(void))dlsym(h, "fake_nvml_idle_waits");
    assert_non_null(idle);
    double t0 = carma_mono_s();
    while (!idle() && carma_mono_s() - t0 < 60) {
        struct timespec nap = {0, 10 * 1000000L};
        nanosleep(&nap, NULL);
    }
    unsigned long n = idle();
    dlclose(h);
    if (!n)
        fail_msg("the Xid thread did not take every Xid line within 60 s");
}

static void test_xid_events(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    assert_int_equal(gpu_fake_write(f->state, TWO), 0);
    struct carma_err err = {{0}};
    /* not asked for: no thread, no descriptor */
    struct carma_gpu_nvml_opts o = {.lib = f->lib, .dcgm = CARMA_GPU_SRC_OFF};
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), 0);
    assert_int_equal(b.ops->xid_fd(&b), -1);
    b.ops->close(&b);

    o.xid_events = 1;
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    int fd = b.ops->xid_fd(&b);
    assert_true(fd >= 0);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "Xid events from 2 of 2 GPUs"));
    assert_false(xid_ready(fd, 300)); /* nothing yet */
    char text[2048];
    snprintf(text, sizeof text, "%sxid 1 48\nxid 0 31 gi=2\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0); /* the fake re-reads its state */
    struct carma_gpu_xid x[4];
    assert_int_equal(xid_take(&b, fd, x, 2), 2);
    assert_int_equal(x[0].gpu, 1);
    assert_int_equal(x[0].xid, 48);
    assert_int_equal(x[0].gpu_instance, UINT32_MAX);
    assert_int_equal(x[1].gpu, 0);
    assert_int_equal(x[1].xid, 31);
    assert_int_equal(x[1].gpu_instance, 2);
    assert_false(xid_ready(fd, 300)); /* taken: the descriptor is quiet again */

    /* a handle NVML never gave is not an Xid of ours; a full queue counts what it drops */
    size_t len = strlen(text);
    len += (size_t)snprintf(text + len, sizeof text - len, "xid_device 0x1234 79\n");
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_false(xid_ready(fd, 400));
    static char many[64 * 1024];
    size_t m = (size_t)snprintf(many, sizeof many, "%s", text);
    for (unsigned k = 0; k < CARMA_GPU_XID_QUEUE + 44u; k++)
        m += (size_t)snprintf(many + m, sizeof many - m, "xid 0 %u\n", 1000 + k);
    assert_true(m < sizeof many - 1);
    assert_int_equal(gpu_fake_write(f->state, many), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    xids_all_taken(f); /* the queue full, the rest counted */
    struct carma_gpu_xid big[CARMA_GPU_XID_QUEUE + 8];
    uint64_t lost = 0;
    assert_int_equal(b.ops->xids(&b, big, CARMA_GPU_XID_QUEUE + 8, &lost), CARMA_GPU_XID_QUEUE);
    assert_int_equal(lost, 44);
    assert_int_equal(big[0].xid, 1000);
    assert_int_equal(big[CARMA_GPU_XID_QUEUE - 1].xid, 1000 + CARMA_GPU_XID_QUEUE - 1);
    assert_false(xid_ready(fd, 100));
    b.ops->close(&b);

    /* a storm of one Xid takes one entry, counted: a grave one after it is not lost */
    m = (size_t)snprintf(many, sizeof many, "%s", TWO);
    for (unsigned k = 0; k < 600; k++)
        m += (size_t)snprintf(many + m, sizeof many - m, "xid 0 13\n");
    m += (size_t)snprintf(many + m, sizeof many - m, "xid 0 79\n");
    assert_true(m < sizeof many - 1);
    assert_int_equal(gpu_fake_write(f->state, TWO), 0); /* no Xid lines before the open */
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    fd = b.ops->xid_fd(&b);
    assert_int_equal(gpu_fake_write(f->state, many), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    xids_all_taken(f);
    lost = 7;
    assert_int_equal(b.ops->xids(&b, big, 8, &lost), 2);
    assert_int_equal(lost, 0);
    assert_int_equal(big[0].xid, 13);
    assert_int_equal(big[0].count, 600);
    assert_int_equal(big[1].xid, 79);
    assert_int_equal(big[1].count, 1);
    b.ops->close(&b);

    /* a lost GPU fails every wait of its set: the set is built again without it, and the
     * other GPU's Xids come again */
    assert_int_equal(gpu_fake_write(f->state, TWO), 0);
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    fd = b.ops->xid_fd(&b);
    snprintf(text, sizeof text, "%s", TWO);
    char *second = strstr(text, "gpu uuid=GPU-bbbb");
    assert_non_null(second);
    memcpy(second, "gpu lost=1 uuid=GPU-bbbb", 24); /* same length as before */
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    for (double w0 = carma_mono_s(); carma_mono_s() - w0 < 30;) {
        b.ops->describe(&b, d, sizeof d);
        if (strstr(d, "registered again"))
            break;
        struct timespec nap = {0, 100 * 1000000L};
        nanosleep(&nap, NULL);
    }
    assert_non_null(strstr(d, "Xid events from 1 of 2 GPUs, none from 1 GPU (GPU 1: GPU_IS_LOST)"
                              ", registered again 1 time"));
    size_t tl = strlen(text);
    snprintf(text + tl, sizeof text - tl, "xid 0 48\n");
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(xid_take(&b, fd, x, 1), 1);
    assert_int_equal(x[0].gpu, 0);
    assert_int_equal(x[0].xid, 48);
    b.ops->close(&b);

    /* a registration that answers UNKNOWN leaves its set undefined: built again without
     * that GPU (the fake fails every use of the undefined set) */
    snprintf(text, sizeof text, "%sfail 1 nvmlDeviceRegisterEvents UNKNOWN\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    fd = b.ops->xid_fd(&b);
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "Xid events from 1 of 2 GPUs, none from 1 GPU (GPU 1: UNKNOWN)"));
    tl = strlen(text);
    snprintf(text + tl, sizeof text - tl, "xid 0 94\n");
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(xid_take(&b, fd, x, 1), 1);
    assert_int_equal(x[0].xid, 94);
    b.ops->describe(&b, d, sizeof d);
    assert_null(strstr(d, "waits failing"));
    b.ops->close(&b);

    /* waits that fail are said in describe(); the thread goes on */
    snprintf(text, sizeof text, "%sfail * nvmlEventSetWait_v2 UNKNOWN\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    for (double w0 = carma_mono_s(); carma_mono_s() - w0 < 30;) {
        b.ops->describe(&b, d, sizeof d);
        if (strstr(d, "waits failing: UNKNOWN"))
            break;
        struct timespec nap = {0, 50 * 1000000L};
        nanosleep(&nap, NULL);
    }
    assert_non_null(strstr(d, "waits failing: UNKNOWN"));
    b.ops->close(&b);

    /* a GPU that cannot register is named; the others still report */
    snprintf(text, sizeof text, "%sfail 1 nvmlDeviceRegisterEvents NOT_SUPPORTED\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(
        strstr(d, "Xid events from 1 of 2 GPUs, none from 1 GPU (GPU 1: NOT_SUPPORTED)"));
    assert_true(b.ops->xid_fd(&b) >= 0);
    b.ops->close(&b);

    /* none at all: no descriptor, and why */
    snprintf(text, sizeof text, "%sfail * nvmlEventSetCreate NOT_SUPPORTED\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "no Xid events: nvmlEventSetCreate: NOT_SUPPORTED"));
    assert_int_equal(b.ops->xid_fd(&b), -1);
    assert_int_equal(b.ops->xids(&b, x, 4, NULL), 0);
    b.ops->close(&b);
}

/* CPU time this process has used, in seconds. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A driver whose waits answer at once, TIMEOUT before their time or an event carma drops
 * (another type, a handle it never gave), must not make the Xid thread spin a core. */
static void test_xid_wait_at_once_does_not_spin(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = f->lib, .dcgm = CARMA_GPU_SRC_OFF, .xid_events = 1};
    char text[2048];
    const char *tail[] = {"fail * nvmlEventSetWait_v2 TIMEOUT", NULL};
    for (int k = 0; tail[k]; k++) {
        snprintf(text, sizeof text, "%s%s\n", TWO, tail[k]);
        assert_int_equal(gpu_fake_write(f->state, text), 0);
        if (carma_gpu_open_nvml_opts(&b, &o, &err))
            fail_msg("open: %s", err.msg);
        double c0 = cpu_s(), t0 = carma_mono_s();
        struct timespec nap = {1, 0};
        nanosleep(&nap, NULL);
        double used = cpu_s() - c0, took = carma_mono_s() - t0;
        b.ops->close(&b);
        if (used > 0.25 * took)
            fail_msg("%s: the Xid thread used %.2f s of CPU in %.2f s", tail[k], used, took);
    }
}

/* The fake's xid_late lines (the driver's Xids just after a registration), as carmad's
 * restart tests use them: a set whose waits fail does not hold the calls outside the
 * event API for the lines it cannot take, and a line is handed out once, not again to
 * the set built again after a lost GPU. */
static void test_xid_late(void **state)
{
    FIXTURE(state);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = f->lib, .dcgm = CARMA_GPU_SRC_OFF, .xid_events = 1};
    char text[2048];
    struct carma_gpu_sample s;

    /* every wait fails (and is not one after which the set is built again): the lines
     * are never taken, and a call outside the event API goes on at once */
    snprintf(text, sizeof text, "%sfail * nvmlEventSetWait_v2 NO_PERMISSION\nxid_late 0 94\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    double t0 = carma_mono_s();
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    double took = carma_mono_s() - t0;
    if (took > 2)
        fail_msg("open and a sample took %.1f s: held for Xids no wait can take", took);
    b.ops->close(&b);

    /* handed to the set registered while it is last, and taken once */
    snprintf(text, sizeof text, "%sxid_late 0 94\n", TWO);
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    if (carma_gpu_open_nvml_opts(&b, &o, &err))
        fail_msg("open: %s", err.msg);
    int fd = b.ops->xid_fd(&b);
    struct carma_gpu_xid x[4];
    assert_int_equal(xid_take(&b, fd, x, 1), 1);
    assert_int_equal(x[0].gpu, 0);
    assert_int_equal(x[0].xid, 94);
    assert_int_equal(x[0].count, 1);
    /* GPU 1 lost: the set is built again (without it) while the line is still last; it
     * is not handed out again */
    char *second = strstr(text, "gpu uuid=GPU-bbbb");
    assert_non_null(second);
    memcpy(second, "gpu lost=1 uuid=GPU-bbbb", 24); /* same length as before */
    assert_int_equal(gpu_fake_write(f->state, text), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    char d[512] = "";
    for (double w0 = carma_mono_s(); !strstr(d, "registered again") && carma_mono_s() - w0 < 30;) {
        struct timespec nap = {0, 100 * 1000000L};
        nanosleep(&nap, NULL);
        b.ops->describe(&b, d, sizeof d);
    }
    assert_non_null(strstr(d, "registered again 1 time"));
    if (xid_ready(fd, 500)) {
        size_t n = b.ops->xids(&b, x, 4, NULL);
        fail_msg("%zu Xid%s again after the rebuild, the first %llu on GPU %u", n,
                 n == 1 ? "" : "s", n ? (unsigned long long)x[0].xid : 0ull, n ? x[0].gpu : 0);
    }
    b.ops->close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_mps_clients),
        cmocka_unit_test(test_not_supported_is_absent),
        cmocka_unit_test(test_gpu_lost_drains),
        cmocka_unit_test(test_lost_by_one_call),
        cmocka_unit_test(test_memory_error_fails_sample),
        cmocka_unit_test(test_memory_v2_falls_back_to_v1),
        cmocka_unit_test(test_skips_unusable_gpus),
        cmocka_unit_test(test_absurd_answers_bounded),
        cmocka_unit_test(test_gpm_signals),
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_not_an_nvml_library),
        cmocka_unit_test(test_reopen_many_times),
        cmocka_unit_test(test_islands_nvlink),
        cmocka_unit_test(test_islands_pcie),
        cmocka_unit_test(test_islands_level_out_of_range),
        cmocka_unit_test(test_islands_unknown),
        cmocka_unit_test(test_xid_events),
        cmocka_unit_test(test_xid_late),
        cmocka_unit_test(test_xid_wait_at_once_does_not_spin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
