#include "core/window.h"

#include <assert.h>
#include <string.h>

void carma_window_init(struct carma_window *w, uint32_t cap)
{
    memset(w, 0, sizeof *w);
    w->cap = cap < 1 ? 1 : cap > CARMA_WINDOW_MAX ? CARMA_WINDOW_MAX : cap;
}

void carma_window_clear(struct carma_window *w)
{
    w->len = 0;
    w->head = 0;
}

void carma_window_push(struct carma_window *w, float x)
{
    assert(w->cap >= 1 && w->cap <= CARMA_WINDOW_MAX);
    w->v[w->head] = x;
    w->head = (w->head + 1) % w->cap;
    if (w->len < w->cap)
        w->len++;
}

/* Sample i of the window, 0 = oldest. */
static float window_at(const struct carma_window *w, uint32_t i)
{
    uint32_t start = (w->head + w->cap - w->len) % w->cap;
    return w->v[(start + i) % w->cap];
}

static void sort_floats(float *a, uint32_t n)
{
    /* Insertion sort: n <= CARMA_WINDOW_MAX and windows are mostly near-sorted runs. */
    for (uint32_t i = 1; i < n; i++) {
        float x = a[i];
        uint32_t j = i;
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/* numpy.percentile's default (linear) on a sorted array. */
static float percentile_sorted(const float *a, uint32_t n, double p)
{
    double rank = p / 100.0 * (double)(n - 1);
    uint32_t lo = (uint32_t)rank;
    uint32_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = rank - (double)lo;
    return (float)((double)a[lo] + ((double)a[hi] - (double)a[lo]) * frac);
}

void carma_window_stats(const struct carma_window *w, struct carma_window_stats *out)
{
    out->n = w->len;
    if (w->len == 0) {
        out->mean = out->median = out->p95 = out->ema = out->last = -1.0f;
        return;
    }
    float sorted[CARMA_WINDOW_MAX];
    double sum = 0, ema = window_at(w, 0);
    double alpha = 2.0 / ((double)w->cap + 1.0);
    for (uint32_t i = 0; i < w->len; i++) {
        float x = window_at(w, i);
        sorted[i] = x;
        sum += x;
        if (i)
            ema = alpha * x + (1.0 - alpha) * ema;
    }
    sort_floats(sorted, w->len);
    out->mean = (float)(sum / w->len);
    out->median = percentile_sorted(sorted, w->len, 50.0);
    out->p95 = percentile_sorted(sorted, w->len, 95.0);
    out->ema = (float)ema;
    out->last = window_at(w, w->len - 1);
}

float carma_window_risk(const struct carma_window *w)
{
    struct carma_window_stats st;
    carma_window_stats(w, &st);
    if (st.n == 0)
        return -1.0f;
    return 0.2f * st.mean + 0.2f * st.median + 0.3f * st.p95 + 0.1f * st.median + 0.2f * st.ema;
}
