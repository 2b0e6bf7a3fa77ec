/* NVML backend: placeholder until the dlopen implementation lands (next commit). */
#include "gpu/backend.h"

#include <errno.h>

int carma_gpu_open_nvml_opts(struct carma_gpu_backend *b, const struct carma_gpu_nvml_opts *o,
                             struct carma_err *err)
{
    (void)b;
    (void)o;
    return carma_err_set(err, -ENOSYS, "NVML backend not built yet");
}

int carma_gpu_open_nvml(struct carma_gpu_backend *b, const char *lib, struct carma_err *err)
{
    struct carma_gpu_nvml_opts o = {.lib = lib};
    return carma_gpu_open_nvml_opts(b, &o, err);
}

int carma_gpu_open_dcgm(struct carma_gpu_backend *b, const char *lib, struct carma_err *err)
{
    (void)b;
    (void)lib;
    return carma_err_set(err, -ENOSYS, "DCGM backend not built yet");
}
