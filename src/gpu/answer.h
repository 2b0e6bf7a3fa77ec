/* Untrusted answers from vendor libraries (NVML, DCGM), made safe before anything
 * else in carma sees them: strings that may lack their NUL or carry control bytes,
 * process lists with absurd counts, pids or duplicates, memory figures that do not
 * add up, ratios out of range. Pure functions over plain bytes (no vendor headers),
 * so the fuzz target tests/fuzz/fuzz_nvml_answers.c can drive them directly. */
#ifndef CARMA_GPU_ANSWER_H
#define CARMA_GPU_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/backend.h"

/* Largest pid carma believes (the kernel's PID_MAX_LIMIT, 2^22). */
#define CARMA_GPU_PID_MAX 4194304

/* Copies at most srccap bytes of src, stopping at a NUL, into dst (capacity
 * dstcap >= 1, always NUL-terminated): bytes outside printable ASCII become '?',
 * leading and trailing blanks are dropped. Returns the length written. */
size_t carma_gpu_answer_str(char *dst, size_t dstcap, const char *src, size_t srccap);

/* Converts `count` raw process records of `stride` bytes each (NVML's process
 * info v1, 16 B, or v2/v3, 24 B: a 32-bit pid at offset 0 and a 64-bit byte count
 * at offset 8), of which the buffer holds at most `rawcap`, into out[0..*n) with
 * *n in: capacity. Records with pid 0 or above CARMA_GPU_PID_MAX are dropped; a
 * pid listed twice (one per MIG instance) is merged, its memory summed
 * (UINT64_MAX, "unknown", wins). Returns 0, or -EOVERFLOW when more distinct
 * processes remain than out holds (out then holds the first *n of them). */
int carma_gpu_answer_procs(const void *raw, size_t stride, size_t count, size_t rawcap,
                           struct carma_gpu_proc *out, size_t *n);

/* Adds process (pid, mem) to out[0..*n), which holds cap: a pid already there is one
 * process with it, its memory summed (sum: one process's share of several MIG instances,
 * saturating below UINT64_MAX) or the larger figure (a process two lists report), and
 * UINT64_MAX ("unknown") wins; a new pid is appended. Returns 0, or -EOVERFLOW when a new
 * pid finds out full (out unchanged). */
int carma_gpu_procs_add(struct carma_gpu_proc *out, size_t *n, size_t cap, pid_t pid, uint64_t mem,
                        int sum);

/* Memory: used clamped to total, free to total - used; free derived from used
 * when free is unknown (UINT64_MAX). Returns -EIO when total is 0. */
int carma_gpu_answer_mem(uint64_t total, uint64_t used, uint64_t free_b, uint64_t *used_out,
                         uint64_t *free_out);

/* A percentage (NVML utilisation, GPM metrics) as a ratio 0..1; values a little
 * above 100 (rounding) become 1; NaN, negative or above 105 become -1 (absent). */
double carma_gpu_answer_pct(double pct);

/* A DCGM ratio 0..1 likewise: blank markers (>= 2^47), NaN, negative or above 1.05
 * become -1. */
double carma_gpu_answer_ratio(double r);

/* Power in milliwatts as watts; above 5 kW (no board draws that) is absent, -1. */
double carma_gpu_answer_power_mw(uint64_t mw);

#endif
