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

/* a ranks before b: by value, NaN last. */
static int value_before(float a, float b)
{
    return a < b || (b != b && a == a);
}

static void swap_floats(float *a, float *b)
{
    float t = *a;
    *a = *b;
    *b = t;
}

static void sort_small(float *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && value_before(a[j], a[j - 1]); j--)
            swap_floats(&a[j], &a[j - 1]);
}

static float median3(float x, float y, float z)
{
    if (value_before(y, x))
        swap_floats(&x, &y);
    if (value_before(z, y))
        y = value_before(z, x) ? x : z;
    return y;
}

/* Rearranges a[0..n) so that a[k] holds the sample of rank k (0 = smallest), with none
 * greater before it and none smaller after it, in O(n) worst case: a three-way
 * partition around the median of three, and after a step that kept more than 3/4 of
 * the samples, around the median of the medians of groups of 5 (which keeps at most
 * about 7/10). The former insertion sort of every query was O(W^2) on a window read
 * in falling order. */
static void select_rank(float *a, uint32_t n, uint32_t k)
{
    assert(k < n);
    int cheap = 1;
    while (n > 10) {
        float pivot;
        if (cheap) {
            pivot = median3(a[0], a[n / 2], a[n - 1]);
        } else {
            uint32_t ng = 0; /* medians of the whole groups, moved to the front */
            for (uint32_t i = 0; i + 5 <= n; i += 5, ng++) {
                sort_small(a + i, 5);
                swap_floats(&a[ng], &a[i + 2]);
            }
            select_rank(a, ng, ng / 2);
            pivot = a[ng / 2];
        }
        uint32_t lt = 0, i = 0, gt = n; /* [0,lt) < pivot, [lt,gt) = pivot, [gt,n) > */
        while (i < gt) {
            if (value_before(a[i], pivot))
                swap_floats(&a[lt++], &a[i++]);
            else if (value_before(pivot, a[i]))
                swap_floats(&a[i], &a[--gt]);
            else
                i++;
        }
        uint32_t kept;
        if (k < lt) {
            kept = lt;
        } else if (k >= gt) {
            kept = n - gt;
            a += gt;
            k -= gt;
        } else {
            return;
        }
        cheap = kept <= n / 4 * 3;
        n = kept;
    }
    sort_small(a, n);
}

/* The smallest of a[0..n), n >= 1. */
static float min_of(const float *a, uint32_t n)
{
    float m = a[0];
    for (uint32_t i = 1; i < n; i++)
        if (value_before(a[i], m))
            m = a[i];
    return m;
}

/* numpy.percentile's default (linear) on a[0..n), which it rearranges; a[0..from)
 * already hold the `from` smallest samples in order (from = n: a is sorted). */
static float percentile_select(float *a, uint32_t n, uint32_t from, double p)
{
    double rank = p / 100.0 * (double)(n - 1);
    uint32_t lo = (uint32_t)rank;
    double frac = rank - (double)lo;
    if (lo >= from)
        select_rank(a + from, n - from, lo - from);
    double x = a[lo], y = lo + 1 >= n     ? a[lo]
                          : lo + 1 < from ? a[lo + 1]
                                          : min_of(a + lo + 1, n - lo - 1);
    return (float)(x + (y - x) * frac);
}

void carma_window_stats(const struct carma_window *w, struct carma_window_stats *out)
{
    out->n = w->len;
    if (w->len == 0) {
        out->mean = out->median = out->p95 = out->ema = out->last = -1.0f;
        return;
    }
    /* one pass oldest to newest: mean, EMA and a copy to select from */
    float a[CARMA_WINDOW_MAX];
    uint32_t at = w->head >= w->len ? w->head - w->len : w->head + w->cap - w->len;
    double sum = 0, ema = w->v[at];
    double alpha = 2.0 / ((double)w->cap + 1.0);
    int sorted = 1; /* in value order already (a GPU's activity that held or rose) */
    for (uint32_t i = 0; i < w->len; i++, at = at + 1 == w->cap ? 0 : at + 1) {
        float x = w->v[at];
        a[i] = x;
        sum += x;
        if (i) {
            ema = alpha * x + (1.0 - alpha) * ema;
            sorted &= !value_before(x, a[i - 1]);
        }
    }
    out->mean = (float)(sum / w->len);
    /* the median's rank first: p95's is not below it, so its selection starts there */
    uint32_t lo50 = (uint32_t)(50.0 / 100.0 * (double)(w->len - 1));
    out->median = percentile_select(a, w->len, sorted ? w->len : 0, 50.0);
    out->p95 = percentile_select(a, w->len, sorted ? w->len : lo50 + 1, 95.0);
    out->ema = (float)ema;
    out->last = w->v[w->head ? w->head - 1 : w->cap - 1];
}

float carma_window_risk(const struct carma_window *w)
{
    struct carma_window_stats st;
    carma_window_stats(w, &st);
    if (st.n == 0)
        return -1.0f;
    return 0.2f * st.mean + 0.2f * st.median + 0.3f * st.p95 + 0.1f * st.median + 0.2f * st.ema;
}
