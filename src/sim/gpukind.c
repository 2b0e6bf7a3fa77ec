#include "sim/gpukind.h"

#include "estimate/estimate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Memory: usable MiB as nvidia-smi reports it. Power: board limit from the vendor
 * datasheet (SXM parts; V100 SXM2); idle and static costs are the assumptions
 * documented in docs/model.md (idle about 14% of the limit, an active context with
 * no kernels about 12% more). cuBLAS workspace: PyTorch's default per handle,
 * ":4096:2:16:8" before Hopper, 4096 KiB x 8 on Hopper (CublasHandlePool.cpp). Floor:
 * H100, the most of 31 training processes outside the caching allocator (NVML's
 * per-process memory less torch.cuda.memory_reserved(): 742 to 762 MiB; driver 580,
 * CUDA 13.0, PyTorch 2.11; data/estimator/gpu-peaks-h100). */
static const struct sim_gpu_kind kinds[] = {
    {"a100-40gb", "NVIDIA A100-SXM4-40GB", 40960, 55, 45, 400, EST_CUBLAS_WS_KIB, 80, 0},
    {"a100-80gb", "NVIDIA A100-SXM4-80GB", 81920, 60, 50, 400, EST_CUBLAS_WS_KIB, 80, 0},
    {"h100-80gb", "NVIDIA H100 80GB HBM3", 81559, 70, 80, 700, EST_CUBLAS_WS_HOPPER_KIB, 90,
     762},
    {"v100-32gb", "Tesla V100-SXM2-32GB", 32768, 40, 35, 300, EST_CUBLAS_WS_KIB, 70, 0},
};

const struct sim_gpu_kind *sim_gpu_kind_find(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcasecmp(kinds[i].name, name) == 0)
            return &kinds[i];
    return NULL;
}

const struct sim_gpu_kind *sim_gpu_kind_of_device(const char *name, uint64_t mem_mib)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].model, name) == 0)
            return &kinds[i];
    if (strstr(name, "H100") || strstr(name, "H200")) /* Hopper: the H100's facts */
        return sim_gpu_kind_find("h100-80gb");
    if (strstr(name, "A100"))
        return sim_gpu_kind_find(mem_mib > 60000 ? "a100-80gb" : "a100-40gb");
    if (strstr(name, "V100"))
        return sim_gpu_kind_find("v100-32gb");
    return NULL;
}

void sim_gpu_kind_est_opts(const struct sim_gpu_kind *k, struct est_opts *o)
{
    if (!k)
        return;
    o->gpu_mib = k->mem_mib;
    o->cublas_workspace_kib = k->cublas_workspace_kib;
    o->cc = k->cc;
    o->floor_adjust_mib = k->floor_mib > 0 ? k->floor_mib - EST_ENV_FLOOR_MIB : 0;
}

const struct sim_gpu_kind *sim_gpu_kind_all(size_t *n)
{
    *n = sizeof kinds / sizeof kinds[0];
    return kinds;
}

int sim_gpu_spec_parse(const char *spec, const struct sim_gpu_kind **out, uint16_t *island,
                       size_t cap, size_t *n, struct carma_err *err)
{
    size_t count = 0;
    uint16_t isl = 0;
    const char *p = spec;
    if (!spec || !*spec)
        return carma_err_set(err, -EINVAL, "--gpus: empty GPU list");
    while (*p) {
        size_t len = strcspn(p, ",/");
        char part[64];
        if (len == 0 || len >= sizeof part)
            return carma_err_set(err, -EINVAL, "--gpus: bad part '%.*s' in '%s'", (int)len, p,
                                 spec);
        memcpy(part, p, len);
        part[len] = '\0';
        unsigned long k = 1;
        const char *kname = part;
        /* a count: digits, then 'x' (or 'X', as the kind's name is read in any case) */
        size_t digits = strspn(part, "0123456789");
        char *x = digits && (part[digits] == 'x' || part[digits] == 'X') ? part + digits : NULL;
        if (x) {
            *x = '\0';
            char *e;
            k = strtoul(part, &e, 10);
            if (*e || k == 0)
                return carma_err_set(err, -EINVAL, "--gpus: bad count in '%.*s'", (int)len, p);
            if (k > cap)
                return carma_err_set(err, -EINVAL, "--gpus: more than %zu GPUs in '%.*s'", cap,
                                     (int)len, p);
            kname = x + 1;
        }
        const struct sim_gpu_kind *kind = sim_gpu_kind_find(kname);
        if (!kind)
            return carma_err_set(err, -EINVAL,
                                 "--gpus: unknown GPU kind '%s' (known: a100-40gb, a100-80gb, "
                                 "h100-80gb, v100-32gb)",
                                 kname);
        if (count + k > cap)
            return carma_err_set(err, -EINVAL, "--gpus: more than %zu GPUs", cap);
        for (unsigned long i = 0; i < k; i++) {
            if (island)
                island[count] = isl;
            out[count++] = kind;
        }
        p += len;
        if (*p == ',' || *p == '/') {
            isl += *p == '/'; /* at most cap islands of one GPU or more each */
            if (!p[1])
                return carma_err_set(err, -EINVAL, "--gpus: trailing '%c' in '%s'", *p, spec);
            p++;
        }
    }
    *n = count;
    return 0;
}
