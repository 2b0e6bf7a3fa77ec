/* DCGM profiling signals (private to src/gpu): a connection to a running
 * nv-hostengine through dlopen'd libdcgm.so.4 that watches the profiling fields
 * 1001-1005 (GRACT, SMACT, SMOCC, TENSOR, DRAMA) of every GPU at the monitor
 * interval and reads their latest values.
 *
 * Design: DCGM here is a source of those five signals only, keyed by GPU UUID.
 * Memory, power, energy and processes always come from NVML, which every DCGM host
 * has. Two users:
 *   - the NVML backend (carma_gpu_open_nvml) opens this helper when it can and
 *     merges the signals into its samples, GPU by GPU, matched by UUID;
 *   - carma_gpu_open_dcgm() wraps it as a backend of its own ("dcgm") whose
 *     samples carry the profiling signals and mark everything else absent, for
 *     tools and tests that want DCGM alone.
 * Not thread-safe. */
#ifndef CARMA_GPU_DCGM_H
#define CARMA_GPU_DCGM_H

#include <stddef.h>

#include "gpu/backend.h"
#include "util/err.h"

struct carma_dcgm;

struct carma_dcgm_opts {
    const char *lib;      /* NULL: "libdcgm.so.4" */
    const char *addr;     /* NULL: "127.0.0.1"; "/path": the hostengine's unix socket */
    unsigned interval_ms; /* watch period; 0: 1000 */
};

/* The five signals as ratios 0..1, each < 0 when absent; lost: DCGM says the GPU
 * is lost. */
struct carma_dcgm_prof {
    double gract, smact, smocc, tensor, drama;
    int lost;
};

/* Loads the library, connects (a 1 s timeout), finds the GPUs and their UUIDs,
 * and watches the profiling fields. Returns 0 with *out owned by the caller
 * (carma_dcgm_close), or a negative errno with err saying why (no library, no
 * hostengine, profiling not supported, ...). */
int carma_dcgm_open(struct carma_dcgm **out, const struct carma_dcgm_opts *o,
                    struct carma_err *err);

/* GPUs DCGM knows, and the UUID and name of the k-th ("" when unknown). */
unsigned carma_dcgm_count(const struct carma_dcgm *d);
const char *carma_dcgm_uuid(const struct carma_dcgm *d, unsigned k);
const char *carma_dcgm_name(const struct carma_dcgm *d, unsigned k);

/* The latest values for GPU k. Returns 0 (signals it lacks are absent), or
 * -ENOTCONN when the hostengine went away (then all absent; later reads try to
 * reconnect, at most every 10 intervals, between 1 s and 30 s). */
int carma_dcgm_read(struct carma_dcgm *d, unsigned k, struct carma_dcgm_prof *out);

/* "dcgm 127.0.0.1 (4 GPUs; fields 1001-1005 every 1000 ms)". */
void carma_dcgm_describe(const struct carma_dcgm *d, char *buf, size_t cap);

void carma_dcgm_close(struct carma_dcgm *d);

#endif
