/* OOM classification from exit status and the stderr tail; the shepherd's files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/classify.h"
#include "daemon/shepherd.h"

static enum carma_outcome cls(int exited, int code, int sig, int cancelled, const char *tail)
{
    struct carma_exit x = {exited, code, sig, cancelled};
    return carma_classify(&x, tail, tail ? strlen(tail) : 0, NULL);
}

static void test_oom_messages(void **state)
{
    (void)state;
    const char *msgs[] = {
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "cudaErrorMemoryAllocation: out of memory",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
        "allocate",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "raise torch.OutOfMemoryError(msg)",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node "
        "__wrapped__AddV2_device_/job:localhost/replica:0/task:0/device:GPU:0}} OOM when "
        "allocating tensor with shape[8192,8192] and type float [Op:AddV2]",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request "
        "for 1.00GiB (1073741824B) on device ordinal 0",
        "W external/xla/xla/tsl/framework/bfc_allocator.cc:482] Allocator (GPU_0_bfc) ran out "
        "of memory trying to allocate 4.00GiB (rounded to 4294967296)requested by op",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: out of memory while trying to allocate 1234 bytes",
        "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    };
    for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
        assert_int_equal(cls(1, 1, 0, 0, msgs[i]), CARMA_OUTCOME_OOM);
        assert_int_equal(cls(0, 0, 6, 0, msgs[i]), CARMA_OUTCOME_OOM); /* abort() after OOM */
    }
}

/* Not a GPU out of memory: retrying with a larger bound or a GPU to itself helps none of
 * these, which must fail, not be rerun. */
static void test_not_gpu_oom(void **state)
{
    (void)state;
    const char *msgs[] = {
        /* the JVM's heap (host memory) */
        "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space",
        "java.lang.OutOfMemoryError: GC overhead limit exceeded",
        /* gRPC's status of that name: a message too large, a quota, a rate limit */
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n"
        "\tstatus = StatusCode.RESOURCE_EXHAUSTED\n\tdetails = \"Received message larger "
        "than max (8388653 vs. 4194304)\"",
        "google.api_core.exceptions.ResourceExhausted: 429 RESOURCE_EXHAUSTED: Quota exceeded",
        "MemoryError",
    };
    for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
        assert_null(carma_classify_oom_text(msgs[i], strlen(msgs[i])));
        assert_int_equal(cls(1, 1, 0, 0, msgs[i]), CARMA_OUTCOME_FAILED);
    }
}

static void test_other_outcomes(void **state)
{
    (void)state;
    /* Success wins even when the log mentions OOM (caught and handled by the job). */
    assert_int_equal(cls(1, 0, 0, 0, "CUDA out of memory; retrying with a smaller batch"),
                     CARMA_OUTCOME_SUCCEEDED);
    assert_int_equal(cls(1, 3, 0, 0, "ValueError: bad shape"), CARMA_OUTCOME_FAILED);
    assert_int_equal(cls(0, 0, 9, 0, ""), CARMA_OUTCOME_FAILED);
    assert_int_equal(cls(1, 1, 0, 0, NULL), CARMA_OUTCOME_FAILED);
    assert_int_equal(cls(0, 0, 15, 1, "CUDA out of memory"), CARMA_OUTCOME_CANCELLED);
    /* a job that catches SIGTERM and exits 0 was still cancelled */
    assert_int_equal(cls(1, 0, 0, 1, ""), CARMA_OUTCOME_CANCELLED);
    /* Not NUL-terminated: the length bounds the search. */
    const char buf[] = {'C', 'U', 'D', 'A', ' ', 'o', 'u', 't'};
    assert_null(carma_classify_oom_text(buf, sizeof buf));
}

static void test_tail_and_status_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/carma-classify-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/stderr", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 5000; i++)
        fputs("noise noise noise\n", f);
    fputs("torch.OutOfMemoryError: CUDA out of memory.\n", f);
    fclose(f);
    static char tail[CARMA_CLASSIFY_TAIL];
    long n = carma_classify_read_tail(path, tail, sizeof tail);
    assert_int_equal(n, CARMA_CLASSIFY_TAIL);
    assert_non_null(carma_classify_oom_text(tail, (size_t)n));
    assert_int_equal(carma_classify_read_tail("/nonexistent", tail, sizeof tail), -ENOENT);

    struct carma_exit x;
    double end;
    assert_int_equal(carma_shepherd_read_status(dir, &x, &end), -ENOENT);
    snprintf(path, sizeof path, "%s/status", dir);
    f = fopen(path, "w");
    fputs("signaled 9\ncancelled 1\nend 1700000000.5\n", f);
    fclose(f);
    assert_int_equal(carma_shepherd_read_status(dir, &x, &end), 0);
    assert_int_equal(x.exited, 0);
    assert_int_equal(x.signal, 9);
    assert_int_equal(x.cancelled, 1);
    assert_true(end > 1.7e9);
    f = fopen(path, "w");
    fputs("garbage\n", f);
    fclose(f);
    assert_int_equal(carma_shepherd_read_status(dir, &x, &end), -EINVAL);
    /* The shepherd file: alive only when pid and start time match. */
    snprintf(path, sizeof path, "%s/shepherd", dir);
    f = fopen(path, "w");
    fprintf(f, "%d %llu\n", (int)getpid(), (unsigned long long)carma_proc_starttime(getpid()));
    fclose(f);
    pid_t p;
    assert_true(carma_shepherd_alive(dir, &p));
    assert_int_equal(p, getpid());
    f = fopen(path, "w");
    fprintf(f, "%d %llu\n", (int)getpid(), 1ull);
    fclose(f);
    assert_false(carma_shepherd_alive(dir, &p)); /* pid reused by another process */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A lease the log's owner holds (F_SETLEASE, F_WRLCK: any open by another process waits
 * up to /proc/sys/fs/lease-break-time, 45 s) must not stall carmad's loop: the tail read
 * fails at once with EWOULDBLOCK. */
static void test_tail_read_at_once_when_its_owner_holds_a_lease(void **state)
{
    (void)state;
    char dir[] = "/tmp/carma-lease-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/stderr", dir);
    FILE *f = fopen(path, "w");
    fputs("CUDA out of memory\n", f);
    fclose(f);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t holder = fork();
    assert_true(holder >= 0);
    if (holder == 0) { /* the lease holder: no other descriptor may be open on the file */
        signal(SIGIO, SIG_IGN);
        int fd = open(path, O_RDONLY);
        char ok = fd >= 0 && fcntl(fd, F_SETLEASE, F_WRLCK) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    if (ok != 'y') { /* leases off (fs.leases-enable = 0): nothing to test */
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
        skip();
    }
    static char tail[CARMA_CLASSIFY_TAIL];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n = carma_classify_read_tail(path, tail, sizeof tail);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    assert_int_equal(n, -EWOULDBLOCK);
    assert_true((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 < 1.0);
    /* the holder gone, the tail reads again */
    assert_true(carma_classify_read_tail(path, tail, sizeof tail) > 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_xid_kinds(void **state)
{
    (void)state;
    const char *what = NULL;
    assert_int_equal(carma_xid_kind(48, &what), CARMA_XID_RESET);
    assert_string_equal(what, "double-bit ECC error");
    assert_int_equal(carma_xid_kind(79, NULL), CARMA_XID_RESET);
    assert_int_equal(carma_xid_kind(95, NULL), CARMA_XID_RESET);
    assert_int_equal(carma_xid_kind(94, &what), CARMA_XID_FAULT);
    assert_string_equal(what, "contained ECC error");
    assert_int_equal(carma_xid_kind(31, NULL), CARMA_XID_APP);
    assert_int_equal(carma_xid_kind(13, NULL), CARMA_XID_APP);
    assert_int_equal(carma_xid_kind(63, NULL), CARMA_XID_OTHER);
    assert_int_equal(carma_xid_kind(999, &what), CARMA_XID_OTHER);
    assert_string_equal(what, "unknown Xid");
    /* untrusted: any 64-bit value */
    assert_int_equal(carma_xid_kind(48ull + (1ull << 32), &what), CARMA_XID_OTHER);
    assert_int_equal(carma_xid_kind(UINT64_MAX, NULL), CARMA_XID_OTHER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xid_kinds),
        cmocka_unit_test(test_oom_messages),
        cmocka_unit_test(test_not_gpu_oom),
        cmocka_unit_test(test_other_outcomes),
        cmocka_unit_test(test_tail_and_status_files),
        cmocka_unit_test(test_tail_read_at_once_when_its_owner_holds_a_lease),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
