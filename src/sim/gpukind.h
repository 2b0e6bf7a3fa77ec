/* Simulated GPU kinds: memory and power facts, and the --gpus SPEC syntax. */
#ifndef CARMA_SIM_GPUKIND_H
#define CARMA_SIM_GPUKIND_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct sim_gpu_kind {
    const char *name;     /* "a100-40gb" */
    const char *model;    /* "NVIDIA A100-SXM4-40GB" */
    double mem_mib;       /* usable memory */
    double idle_w;        /* no context on the GPU */
    double static_w;      /* added once any job is resident (clocks up, context) */
    double max_w;         /* board power limit */
    uint32_t cublas_workspace_kib; /* PyTorch's default cuBLAS workspace per handle */
    uint8_t cc;           /* CUDA compute capability x 10: 70 V100, 80 A100, 90 H100 */
    double floor_mib;     /* a training process's memory outside PyTorch's allocator
                           * (context, libraries), measured on this kind; 0: none measured
                           * (the estimator's default floor, EST_ENV_FLOOR_MIB) */
};

/* Returns the kind named `name` (case-insensitive), or NULL. */
const struct sim_gpu_kind *sim_gpu_kind_find(const char *name);

/* The kind of a real GPU, from NVML's name and total memory: the table's model exactly, else
 * the family in the name ("H100", "H200" and "GH200" -> h100-80gb, Hopper all; "A100" ->
 * a100-40gb or a100-80gb by memory; "V100" -> v100-32gb: the facts the estimator takes
 * from a kind, compute capability, cuBLAS workspace and floor, are the family's); NULL for
 * any other GPU. */
const struct sim_gpu_kind *sim_gpu_kind_of_device(const char *name, uint64_t mem_mib);

struct est_opts;
/* Sets what the estimator takes from kind k (NULL: nothing; the defaults stay): its memory
 * for "fits", its cuBLAS workspace, compute capability and measured floor. */
void sim_gpu_kind_est_opts(const struct sim_gpu_kind *k, struct est_opts *o);

/* All kinds, for help texts. */
const struct sim_gpu_kind *sim_gpu_kind_all(size_t *n);

/* Parses "4xa100-40gb" or "2xa100-40gb,2xv100-32gb" (a count of 1 may omit "1x")
 * into kinds[0..*n) (kinds and the 'x' in any case: "4XA100-40GB"), and each GPU's island into
 * island[0..*n) when island is not NULL:
 * "/" instead of "," begins the next island (GPUs linked by NVLink or behind PCIe
 * switches), as in "4xa100-40gb/4xa100-40gb"; without one, every GPU is of island 0. At
 * most `cap` GPUs. Returns 0 or -EINVAL with err naming the offending part. */
int sim_gpu_spec_parse(const char *spec, const struct sim_gpu_kind **kinds, uint16_t *island,
                       size_t cap, size_t *n, struct carma_err *err);

#endif
