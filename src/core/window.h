/* Window statistics over a fixed ring of the last W samples of one signal
 * (CARMA: W = 30 samples at 1 s). Push is O(1); statistics are O(W) worst case on a
 * copy: one pass for mean and EMA, a linear-time selection for the median and p95.
 * Samples are not NaN (the monitor drops absent readings; a NaN would rank last). */
#ifndef CARMA_CORE_WINDOW_H
#define CARMA_CORE_WINDOW_H

#include <stdint.h>

#define CARMA_WINDOW_MAX 120

struct carma_window {
    float v[CARMA_WINDOW_MAX];
    uint32_t cap;  /* W, 1..CARMA_WINDOW_MAX */
    uint32_t len;  /* samples held, <= cap */
    uint32_t head; /* index of the next write */
};

struct carma_window_stats {
    float mean, median, p95, ema, last;
    uint32_t n;    /* samples the statistics are over; 0: all fields are -1 */
};

/* cap is clamped to [1, CARMA_WINDOW_MAX]. */
void carma_window_init(struct carma_window *w, uint32_t cap);
void carma_window_clear(struct carma_window *w);
void carma_window_push(struct carma_window *w, float x);

/* Mean, median, p95 (linear interpolation between closest ranks, as numpy), EMA
 * over the window oldest to newest (alpha = 2/(W+1), seeded with the oldest). */
void carma_window_stats(const struct carma_window *w, struct carma_window_stats *out);

/* CARMA's risk aggregate: 0.2 mean + 0.2 median + 0.3 p95 + 0.1 p50 + 0.2 EMA
 * (p50 is the median, so it weighs 0.3 in total). Returns -1 on an empty window. */
float carma_window_risk(const struct carma_window *w);

#endif
