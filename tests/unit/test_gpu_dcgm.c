/* DCGM profiling signals against the fake libdcgm.so.4 ($CARMA_FAKE/dcgm), alone and
 * merged into the NVML backend (fake libnvidia-ml.so.1) by UUID: values, absent
 * fields (not supported, blank, stale, out of range), no hostengine, profiling not
 * supported, a hostengine that goes away and comes back, a lost GPU.
 * Skipped without CARMA_FAKE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "gpu/backend.h"
#include "unit/gpu_fake.h"
#include "util/clock.h"

struct fx {
    char nvml[4096], dcgm[4096];
    char nst[256], dst[256];
    void *keep; /* our own reference: the fake stays loaded, its counters readable */
};

static int setup(void **state)
{
    static struct fx f;
    if (!gpu_fake_lib(f.nvml, sizeof f.nvml, "nvidia-ml/libnvidia-ml.so.1") ||
        !gpu_fake_lib(f.dcgm, sizeof f.dcgm, "dcgm/libdcgm.so.4"))
        return 0;
    gpu_fake_state_path(f.nst, sizeof f.nst, "CARMA_FAKE_NVML_STATE", "dcgm-nvml");
    gpu_fake_state_path(f.dst, sizeof f.dst, "CARMA_FAKE_DCGM_STATE", "dcgm");
    f.keep = dlopen(f.dcgm, RTLD_NOW | RTLD_LOCAL);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f) {
        unlink(f->nst);
        unlink(f->dst);
        if (f->keep)
            dlclose(f->keep);
    }
    return 0;
}

#define FIXTURE(st)                                                                              \
    struct fx *f = *(st);                                                                        \
    if (!f)                                                                                      \
        skip();

/* A function the fake exports for tests (not DCGM API). */
static void *fake_fn(struct fx *f, const char *name)
{
    assert_non_null(f->keep);
    void *p = dlsym(f->keep, name);
    assert_non_null(p);
    return p;
}

static const char *NVML2 = "gpu uuid=GPU-aaaa mem_total=40GiB util=90 power_mw=300000\n"
                           "gpu uuid=GPU-bbbb mem_total=80GiB util=10 gpm=1 sm=11 smocc=12 "
                           "dram=13 tensor=14 gract=15\n";

static void test_dcgm_backend_alone(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->dst, "gpu id=3 uuid=GPU-aaaa name=\"NVIDIA A100\" "
                                            "gract=0.9 smact=0.8 smocc=0.45 tensor=0.2 "
                                            "drama=0.4\n"),
                     0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    int rc = carma_gpu_open_dcgm(&b, f->dcgm, &err);
    if (rc)
        fail_msg("open: %s", err.msg);
    assert_string_equal(b.ops->name, "dcgm");
    assert_null(b.ops->processes);
    unsigned n = 0;
    assert_int_equal(b.ops->count(&b, &n), 0);
    assert_int_equal(n, 1);
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_string_equal(in.uuid, "GPU-aaaa");
    assert_string_equal(in.name, "NVIDIA A100");
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.gract, 0.9, 1e-12);
    assert_float_equal(s.smact, 0.8, 1e-12);
    assert_float_equal(s.smocc, 0.45, 1e-12);
    assert_float_equal(s.tensor, 0.2, 1e-12);
    assert_float_equal(s.drama, 0.4, 1e-12);
    assert_true(s.util_gpu < 0 && s.power_w < 0 && s.energy_j < 0);
    long long (*watch)(void) = (long long (*)(void))fake_fn(f, "fake_dcgm_watch_usec");
    int (*conns)(void) = (int (*)(void))fake_fn(f, "fake_dcgm_connections");
    assert_int_equal(watch(), 1000000);
    assert_int_equal(conns(), 1);
    char d[256];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "dcgm 127.0.0.1 (1 GPUs; fields 1001-1005 every 1000 ms)"));
    b.ops->close(&b);
    assert_int_equal(conns(), 0);
}

static void test_merged_into_nvml(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->nst, NVML2), 0);
    /* DCGM knows GPU-aaaa (and one NVML does not list); GPU-bbbb gets GPM. */
    assert_int_equal(gpu_fake_write(f->dst, "gpu id=0 uuid=GPU-zzzz smact=0.99\n"
                                            "gpu id=1 uuid=GPU-aaaa gract=0.7 smact=0.6 "
                                            "smocc=0.3 tensor=0.1 drama=0.2\n"),
                     0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = f->nvml,
                                    .dcgm_lib = f->dcgm,
                                    .dcgm_addr = "/run/nvidia-dcgm/hostengine.sock",
                                    .interval_ms = 500};
    int rc = carma_gpu_open_nvml_opts(&b, &o, &err);
    if (rc)
        fail_msg("open: %s", err.msg);
    long long (*watch)(void) = (long long (*)(void))fake_fn(f, "fake_dcgm_watch_usec");
    assert_int_equal(watch(), 500000);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "from dcgm /run/nvidia-dcgm/hostengine.sock"));
    assert_non_null(strstr(d, "on 1 of 2 GPUs, GPM on the others"));
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.util_gpu, 0.9, 1e-12); /* NVML's own signals stay */
    assert_float_equal(s.power_w, 300, 1e-12);
    assert_float_equal(s.smact, 0.6, 1e-12);
    assert_float_equal(s.smocc, 0.3, 1e-12);
    assert_float_equal(s.drama, 0.2, 1e-12);
    assert_float_equal(s.tensor, 0.1, 1e-12);
    assert_float_equal(s.gract, 0.7, 1e-12);
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_float_equal(s.smact, 0.11, 1e-12); /* GPM */
    assert_float_equal(s.drama, 0.13, 1e-12);
    b.ops->close(&b);
}

static void test_absent_fields(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->nst, NVML2), 0);
    assert_int_equal(gpu_fake_write(f->dst, "gpu uuid=GPU-aaaa gract=blank smact=1.02 "
                                            "smocc=1.5 tensor=nan drama=0.25\n"
                                            "gpu uuid=GPU-bbbb smact=0.5 smocc=0.5 age=60\n"
                                            "fail 0 1005 NOT_SUPPORTED\n"),
                     0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = f->nvml, .dcgm_lib = f->dcgm};
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), 0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_true(s.gract < 0);                 /* DCGM's blank marker */
    assert_float_equal(s.smact, 1.0, 1e-12);  /* rounding above 1: clamped */
    assert_true(s.smocc < 0);                 /* 1.5 is not a ratio */
    assert_true(s.tensor < 0);                /* NaN */
    assert_true(s.drama < 0);                 /* NOT_SUPPORTED for that field */
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_true(s.smact < 0 && s.smocc < 0);  /* a minute old: stale */
    assert_int_equal(s.lost, 0);
    b.ops->close(&b);
}

static void test_no_hostengine(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->nst, NVML2), 0);
    assert_int_equal(gpu_fake_write(f->dst, "hostengine down\ngpu uuid=GPU-aaaa smact=0.5\n"), 0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    assert_int_equal(carma_gpu_open_dcgm(&b, f->dcgm, &err), -ENOTCONN);
    assert_non_null(strstr(err.msg, "no nv-hostengine at 127.0.0.1"));
    /* NVML carries on without it, and says why. */
    struct carma_gpu_nvml_opts o = {
        .lib = f->nvml, .dcgm_lib = f->dcgm, .gpm = CARMA_GPU_SRC_OFF};
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), 0);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "no SMACT/SMOCC/DRAMA source (DCGM: no nv-hostengine"));
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_true(s.smact < 0);
    assert_float_equal(s.util_gpu, 0.9, 1e-12);
    b.ops->close(&b);
    o.dcgm = CARMA_GPU_SRC_REQUIRE;
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), -ENOTCONN);
    assert_non_null(strstr(err.msg, "DCGM required"));
    /* No library at all. */
    o.dcgm_lib = "/nonexistent/libdcgm.so.4";
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), -ENOENT);
}

static void test_profiling_not_supported(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->dst, "watch PROFILING_NOT_SUPPORTED\n"
                                            "gpu uuid=GPU-aaaa smact=0.5\n"),
                     0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    assert_int_equal(carma_gpu_open_dcgm(&b, f->dcgm, &err), -ENOTSUP);
    assert_non_null(strstr(err.msg, "cannot watch profiling fields 1001-1005"));
    assert_int_equal(gpu_fake_write(f->dst, "watch REQUIRES_ROOT\ngpu uuid=GPU-aaaa\n"), 0);
    assert_int_equal(carma_gpu_open_dcgm(&b, f->dcgm, &err), -EACCES);
    assert_non_null(strstr(err.msg, "must run as root"));
    int (*conns)(void) = (int (*)(void))fake_fn(f, "fake_dcgm_connections");
    assert_int_equal(conns(), 0); /* the failed opens disconnected */
}

static void test_hostengine_restart(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->nst, NVML2), 0);
    assert_int_equal(gpu_fake_write(f->dst, "gpu uuid=GPU-aaaa smact=0.5\n"), 0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {
        .lib = f->nvml, .dcgm_lib = f->dcgm, .interval_ms = 100, .gpm = CARMA_GPU_SRC_OFF};
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), 0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.smact, 0.5, 1e-12);
    assert_int_equal(gpu_fake_write(f->dst, "hostengine down\ngpu uuid=GPU-aaaa smact=0.5\n"), 0);
    double down = carma_mono_s(); /* the reconnect wait starts in the sample below */
    assert_int_equal(b.ops->sample(&b, 0, &s), 0); /* NVML still answers */
    assert_true(s.smact < 0);
    assert_int_equal(s.lost, 0);
    char d[512];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "disconnected, reconnecting"));
    /* Back, with the GPU under another DCGM id: found again by UUID, after the
     * reconnect wait (10 intervals, at least 1 s). */
    assert_int_equal(gpu_fake_write(f->dst, "gpu id=0 uuid=GPU-other smact=0.1\n"
                                            "gpu id=7 uuid=GPU-aaaa smact=0.25\n"),
                     0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    /* too soon: within the wait of the sample that found it down (on a host that stalled
     * this test for a second since, the reconnect is due: nothing to tell) */
    if (carma_mono_s() - down < 1)
        assert_true(s.smact < 0);
    usleep(1100 * 1000);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.smact, 0.25, 1e-12);
    b.ops->close(&b);
}

static void test_lost_via_dcgm(void **state)
{
    FIXTURE(state);
    assert_int_equal(gpu_fake_write(f->nst, NVML2), 0);
    assert_int_equal(gpu_fake_write(f->dst, "gpu uuid=GPU-aaaa smact=0.5\n"), 0);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = f->nvml, .dcgm_lib = f->dcgm};
    assert_int_equal(carma_gpu_open_nvml_opts(&b, &o, &err), 0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.lost, 0);
    /* DCGM says lost while NVML still answers: drained all the same. */
    assert_int_equal(gpu_fake_write(f->dst, "gpu uuid=GPU-aaaa smact=0.5 lost=1\n"), 0);
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.lost, 1);
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_int_equal(s.lost, 0);
    b.ops->close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dcgm_backend_alone),
        cmocka_unit_test(test_merged_into_nvml),
        cmocka_unit_test(test_absent_fields),
        cmocka_unit_test(test_no_hostengine),
        cmocka_unit_test(test_profiling_not_supported),
        cmocka_unit_test(test_hostengine_restart),
        cmocka_unit_test(test_lost_via_dcgm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
