#include "gpu/answer.h"

#include <errno.h>
#include <math.h>
#include <string.h>

size_t carma_gpu_answer_str(char *dst, size_t dstcap, const char *src, size_t srccap)
{
    if (dstcap == 0)
        return 0;
    size_t len = src ? strnlen(src, srccap) : 0;
    size_t a = 0, b = len;
    while (a < b && (src[a] == ' ' || src[a] == '\t'))
        a++;
    while (b > a && (src[b - 1] == ' ' || src[b - 1] == '\t' || src[b - 1] == '\n'))
        b--;
    size_t w = 0;
    for (size_t i = a; i < b && w + 1 < dstcap; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[w++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    while (w > 0 && (dst[w - 1] == ' ' || dst[w - 1] == '\t')) /* cut inside a blank run */
        w--;
    dst[w] = '\0';
    return w;
}

int carma_gpu_answer_procs(const void *raw, size_t stride, size_t count, size_t rawcap,
                           struct carma_gpu_proc *out, size_t *n)
{
    const unsigned char *p = raw;
    size_t cap = *n, c = 0;
    int rc = 0;
    if (stride < 16 || !raw)
        count = 0;
    if (count > rawcap)
        count = rawcap;
    for (size_t k = 0; k < count; k++) {
        uint32_t pid;
        uint64_t mem;
        memcpy(&pid, p + k * stride, sizeof pid);
        memcpy(&mem, p + k * stride + 8, sizeof mem);
        if (pid == 0 || pid > CARMA_GPU_PID_MAX)
            continue;
        if (carma_gpu_procs_add(out, &c, cap, (pid_t)pid, mem, 1))
            rc = -EOVERFLOW;
    }
    *n = c;
    return rc;
}

int carma_gpu_procs_add(struct carma_gpu_proc *out, size_t *n, size_t cap, pid_t pid, uint64_t mem,
                        int sum)
{
    size_t j = 0;
    while (j < *n && out[j].pid != pid)
        j++;
    if (j < *n) {
        uint64_t *m = &out[j].mem_bytes;
        if (*m == UINT64_MAX || mem == UINT64_MAX)
            *m = UINT64_MAX;
        else if (sum)
            *m = mem > UINT64_MAX - 1 - *m ? UINT64_MAX - 1 : *m + mem;
        else if (mem > *m)
            *m = mem;
        return 0;
    }
    if (*n == cap)
        return -EOVERFLOW;
    out[*n].pid = pid;
    out[*n].mem_bytes = mem;
    ++*n;
    return 0;
}

int carma_gpu_answer_mem(uint64_t total, uint64_t used, uint64_t free_b, uint64_t *used_out,
                         uint64_t *free_out)
{
    if (total == 0)
        return -EIO;
    if (used > total)
        used = total;
    if (free_b == UINT64_MAX || free_b > total - used)
        free_b = total - used;
    *used_out = used;
    *free_out = free_b;
    return 0;
}

double carma_gpu_answer_pct(double pct)
{
    if (isnan(pct) || pct < 0 || pct > 105)
        return -1;
    return pct >= 100 ? 1 : pct / 100;
}

double carma_gpu_answer_ratio(double r)
{
    if (isnan(r) || r < 0 || r > 1.05)
        return -1;
    return r > 1 ? 1 : r;
}

double carma_gpu_answer_power_mw(uint64_t mw)
{
    return mw > 5000000 ? -1 : (double)mw / 1000;
}
