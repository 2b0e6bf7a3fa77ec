#include "daemon/classify.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* GPU out-of-memory messages only: a retry with a raised bound or a GPU of its own helps
 * nothing else. So no bare "OutOfMemoryError" (Java's java.lang.OutOfMemoryError is the
 * host heap) and no bare "RESOURCE_EXHAUSTED" (any gRPC status of that name: a message
 * too large, a quota): XLA's and TensorFlow's status is matched with the words that
 * make it a memory allocation. */
static const struct {
    const char *needle;
    const char *what;
} oom_patterns[] = {
    {"CUDA out of memory", "PyTorch CUDA out of memory"},
    {"torch.OutOfMemoryError", "PyTorch OutOfMemoryError"},
    {"torch.cuda.OutOfMemoryError", "PyTorch OutOfMemoryError"},
    {"CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS allocation failed"},
    {"cudaErrorMemoryAllocation", "cudaErrorMemoryAllocation"},
    {"RESOURCE_EXHAUSTED: Out of memory", "JAX out of memory"},
    {"RESOURCE_EXHAUSTED: out of memory", "XLA out of memory"},
    {"RESOURCE_EXHAUSTED: Failed to allocate request for", "XLA allocation failed"},
    {"OOM when allocating", "TensorFlow OOM when allocating"},
    {"bfc) ran out of memory trying to allocate", "TensorFlow/XLA GPU allocator out of memory"},
    {"CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_OUT_OF_MEMORY"},
};

/* Xids by the action NVIDIA's Xid catalog gives them (docs.nvidia.com/deploy/xid-errors);
 * those not listed are OTHER. */
static const struct {
    uint16_t xid;
    uint8_t kind;
    const char *what;
} xid_table[] = {
    {13, CARMA_XID_APP, "graphics engine exception"},
    {31, CARMA_XID_APP, "GPU memory page fault"},
    {43, CARMA_XID_APP, "GPU stopped processing"},
    {45, CARMA_XID_APP, "preemptive cleanup"},
    {48, CARMA_XID_RESET, "double-bit ECC error"},
    {61, CARMA_XID_RESET, "micro-controller breakpoint"},
    {62, CARMA_XID_RESET, "micro-controller halt"},
    {63, CARMA_XID_OTHER, "row remapping pending"},
    {64, CARMA_XID_RESET, "row remapping failure"},
    {68, CARMA_XID_APP, "video decoder exception"},
    {69, CARMA_XID_APP, "graphics engine class error"},
    {74, CARMA_XID_RESET, "NVLink error"},
    {79, CARMA_XID_RESET, "fallen off the bus"},
    {92, CARMA_XID_OTHER, "high single-bit ECC error rate"},
    {94, CARMA_XID_FAULT, "contained ECC error"},
    {95, CARMA_XID_RESET, "uncontained ECC error"},
    {119, CARMA_XID_RESET, "GSP RPC timeout"},
    {120, CARMA_XID_RESET, "GSP error"},
    {140, CARMA_XID_RESET, "unrecovered ECC error"},
    {154, CARMA_XID_RESET, "GPU recovery action changed"},
};

enum carma_xid_kind carma_xid_kind(uint64_t xid, const char **what)
{
    for (size_t i = 0; i < sizeof xid_table / sizeof xid_table[0]; i++)
        if (xid_table[i].xid == xid) {
            if (what)
                *what = xid_table[i].what;
            return (enum carma_xid_kind)xid_table[i].kind;
        }
    if (what)
        *what = "unknown Xid";
    return CARMA_XID_OTHER;
}

const char *carma_classify_oom_text(const char *text, size_t len)
{
    if (!text)
        return NULL;
    for (size_t i = 0; i < sizeof oom_patterns / sizeof oom_patterns[0]; i++)
        if (memmem(text, len, oom_patterns[i].needle, strlen(oom_patterns[i].needle)))
            return oom_patterns[i].what;
    return NULL;
}

enum carma_outcome carma_classify(const struct carma_exit *x, const char *tail, size_t len,
                                  const char **why)
{
    const char *w;
    enum carma_outcome o;
    /* a cancel wins over exit 0: a job that catches SIGTERM, saves and exits 0 did not
     * finish, and `carma wait` must not tell a pipeline it did (the shepherd says
     * cancelled only when it delivered one) */
    if (x->cancelled) {
        o = CARMA_OUTCOME_CANCELLED;
        w = "cancelled";
    } else if (x->exited && x->code == 0) {
        o = CARMA_OUTCOME_SUCCEEDED;
        w = "succeeded";
    } else if ((w = carma_classify_oom_text(tail, len))) {
        o = CARMA_OUTCOME_OOM;
    } else {
        o = CARMA_OUTCOME_FAILED;
        w = x->exited ? "non-zero exit" : "killed by a signal";
    }
    if (why)
        *why = w;
    return o;
}

long carma_classify_read_tail(const char *path, char *buf, size_t cap)
{
    /* O_NONBLOCK: the log is the job's user's, who may hold a lease on it (F_SETLEASE);
     * a blocking open would wait out /proc/sys/fs/lease-break-time (45 s) in carmad's
     * loop. On a regular file the flag changes only that: the open fails at once with
     * EWOULDBLOCK. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    off_t off = st.st_size > (off_t)cap ? st.st_size - (off_t)cap : 0;
    size_t n = 0;
    while (n < cap) {
        ssize_t r = pread(fd, buf + n, cap - n, off + (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return (long)n;
}
