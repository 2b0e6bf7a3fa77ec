/* The NVML backend against an old driver's library ($CARMA_FAKE/nvidia-ml-old: no
 * _v2/_v3 symbols, 16-byte process records, no memory v2, no energy, no GPM): every
 * fallback taken through a real failing dlsym. Its own binary, so that the modern
 * fake is never loaded in the same process. Skipped without CARMA_FAKE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "gpu/backend.h"
#include "unit/gpu_fake.h"

#define GiB (1ull << 30)

static void test_old_driver(void **state)
{
    (void)state;
    char lib[4096], st[256];
    if (!gpu_fake_lib(lib, sizeof lib, "nvidia-ml-old/libnvidia-ml.so.1"))
        skip();
    gpu_fake_state_path(st, sizeof st, "CARMA_FAKE_NVML_STATE", "nvml-old");
    assert_int_equal(
        gpu_fake_write(st, "driver 418.67\n"
                           "gpu uuid=GPU-old0 name=\"Tesla V100-SXM2-32GB\" mem_total=32GiB "
                           "mem_used=2GiB mem_reserved=1GiB util=80 mem_util=40 power_mw=250000 "
                           "energy_mj=999 gpm=1 sm=50 pci=00000000:3B:00.0\n"
                           "proc 0 pid=4242 mem=2GiB\nproc 0 pid=4243 mem=unknown\n"
                           "proc 0 pid=4244 mem=1GiB mps=1\n"),
        0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = lib, .dcgm = CARMA_GPU_SRC_OFF};
    int rc = carma_gpu_open_nvml_opts(&b, &o, &err);
    if (rc)
        fail_msg("open: %s", err.msg);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "nvml 418.67 (nvmlInit, "));
    assert_non_null(strstr(d, "nvmlDeviceGetComputeRunningProcesses and the MPS list, memory v1"));
    assert_null(strstr(d, "GPM on"));
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_string_equal(in.uuid, "GPU-old0");
    /* the unversioned nvmlDeviceGetPciInfo: the old layout's bus id, a 4-digit domain */
    assert_string_equal(in.pci_bus_id, "0000:3B:00.0");
    assert_int_equal(in.mem_total_bytes, 32 * GiB);
    assert_int_equal(in.island, -1); /* no topology calls: unknown, even for one GPU */
    assert_non_null(strstr(d, "1 GPUs, islands unknown (this NVML has no topology calls)"));
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.mem_used_bytes, 3 * GiB); /* v1: reserved counts as used */
    assert_int_equal(s.mem_free_bytes, 29 * GiB);
    assert_float_equal(s.util_gpu, 0.8, 1e-12);
    assert_float_equal(s.power_w, 250, 1e-12);
    assert_true(s.energy_j < 0); /* no nvmlDeviceGetTotalEnergyConsumption */
    assert_true(s.smact < 0);    /* no GPM symbols */
    struct carma_gpu_proc p[4];
    size_t n = 4;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(n, 3); /* the MPS client through the unversioned MPS list */
    assert_int_equal(p[2].pid, 4244);
    assert_int_equal(p[2].mem_bytes, 1 * GiB);
    assert_int_equal(p[0].pid, 4242);
    assert_int_equal(p[0].mem_bytes, 2 * GiB);
    assert_int_equal(p[1].pid, 4243);
    assert_int_equal(p[1].mem_bytes, UINT64_MAX);
    b.ops->close(&b);

    /* Xids through the unversioned nvmlEventSetWait, which writes no instance ids */
    o.xid_events = 1;
    if ((rc = carma_gpu_open_nvml_opts(&b, &o, &err)))
        fail_msg("open: %s", err.msg);
    int fd = b.ops->xid_fd(&b);
    assert_true(fd >= 0);
    assert_int_equal(gpu_fake_write(st, "driver 418.67\ngpu uuid=GPU-old0 mem_total=32GiB\n"
                                        "xid 0 79 gi=3\n"),
                     0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&pf, 1, 5000), 1);
    struct carma_gpu_xid x[2];
    assert_int_equal(b.ops->xids(&b, x, 2, NULL), 1);
    assert_int_equal(x[0].xid, 79);
    assert_int_equal(x[0].gpu_instance, UINT32_MAX);
    b.ops->close(&b);

    /* two GPUs: the lines the modern library answers change nothing */
    assert_int_equal(gpu_fake_write(st, "driver 418.67\ngpu uuid=GPU-old0 mem_total=32GiB\n"
                                        "gpu uuid=GPU-old1 mem_total=32GiB\n"
                                        "nvlink 0 1\ntopology 0 1 SINGLE\n"),
                     0);
    o.xid_events = 0;
    if ((rc = carma_gpu_open_nvml_opts(&b, &o, &err)))
        fail_msg("open: %s", err.msg);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(b.ops->info(&b, i, &in), 0);
        assert_int_equal(in.island, -1);
    }
    b.ops->close(&b);
    unlink(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
