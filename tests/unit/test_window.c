/* Window statistics against hand-computed values, and against a brute-force reference
 * (the former sort-on-every-query code) on random sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/window.h"

static void test_empty(void **state)
{
    (void)state;
    struct carma_window w;
    carma_window_init(&w, 30);
    struct carma_window_stats st;
    carma_window_stats(&w, &st);
    assert_int_equal(st.n, 0);
    assert_true(carma_window_risk(&w) < 0);
}

static void test_stats_hand_computed(void **state)
{
    (void)state;
    struct carma_window w;
    carma_window_init(&w, 5);
    const float xs[] = {0.1f, 0.5f, 0.3f, 0.9f, 0.7f};
    for (int i = 0; i < 5; i++)
        carma_window_push(&w, xs[i]);
    struct carma_window_stats st;
    carma_window_stats(&w, &st);
    assert_int_equal(st.n, 5);
    assert_float_equal(st.mean, 0.5f, 1e-6);
    assert_float_equal(st.median, 0.5f, 1e-6);
    /* sorted 0.1 0.3 0.5 0.7 0.9: rank 0.95*4 = 3.8 -> 0.7 + 0.8*0.2 = 0.86 */
    assert_float_equal(st.p95, 0.86f, 1e-6);
    /* EMA alpha = 2/6: 0.1 -> 0.2333 -> 0.2556 -> 0.4704 -> 0.5469 */
    double a = 1.0 / 3.0, e = 0.1;
    for (int i = 1; i < 5; i++)
        e = a * xs[i] + (1 - a) * e;
    assert_float_equal(st.ema, (float)e, 1e-6);
    assert_float_equal(st.last, 0.7f, 1e-6);
    float risk = carma_window_risk(&w);
    assert_float_equal(risk, 0.2f * 0.5f + 0.2f * 0.5f + 0.3f * 0.86f + 0.1f * 0.5f + 0.2f * (float)e,
                       1e-6);
}

static void test_ring_keeps_last_w(void **state)
{
    (void)state;
    struct carma_window w;
    carma_window_init(&w, 3);
    for (int i = 1; i <= 10; i++)
        carma_window_push(&w, (float)i);
    struct carma_window_stats st;
    carma_window_stats(&w, &st);
    assert_int_equal(st.n, 3);
    assert_float_equal(st.mean, 9.0f, 1e-6); /* 8, 9, 10 */
    assert_float_equal(st.last, 10.0f, 1e-6);
    carma_window_clear(&w);
    carma_window_stats(&w, &st);
    assert_int_equal(st.n, 0);
}

static void test_cap_clamped(void **state)
{
    (void)state;
    struct carma_window w;
    carma_window_init(&w, 0);
    assert_int_equal(w.cap, 1);
    carma_window_init(&w, 100000);
    assert_int_equal(w.cap, CARMA_WINDOW_MAX);
}

/* ---- brute-force reference: the samples in time order, sorted on every query ---- */

struct ref {
    float v[CARMA_WINDOW_MAX]; /* oldest first */
    uint32_t cap, len;
};

static void ref_push(struct ref *r, float x)
{
    if (r->len == r->cap) {
        memmove(r->v, r->v + 1, (r->len - 1) * sizeof *r->v);
        r->len--;
    }
    r->v[r->len++] = x;
}

static float ref_percentile(const float *a, uint32_t n, double p)
{
    double rank = p / 100.0 * (double)(n - 1);
    uint32_t lo = (uint32_t)rank;
    uint32_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = rank - (double)lo;
    return (float)((double)a[lo] + ((double)a[hi] - (double)a[lo]) * frac);
}

static void ref_stats(const struct ref *r, struct carma_window_stats *out)
{
    out->n = r->len;
    if (r->len == 0) {
        out->mean = out->median = out->p95 = out->ema = out->last = -1.0f;
        return;
    }
    float a[CARMA_WINDOW_MAX];
    double sum = 0, ema = r->v[0], alpha = 2.0 / ((double)r->cap + 1.0);
    for (uint32_t i = 0; i < r->len; i++) {
        a[i] = r->v[i];
        sum += r->v[i];
        if (i)
            ema = alpha * r->v[i] + (1.0 - alpha) * ema;
    }
    for (uint32_t i = 1; i < r->len; i++) /* insertion sort, as the window did */
        for (uint32_t j = i; j > 0 && a[j - 1] > a[j]; j--) {
            float t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
    out->mean = (float)(sum / r->len);
    out->median = ref_percentile(a, r->len, 50.0);
    out->p95 = ref_percentile(a, r->len, 95.0);
    out->ema = (float)ema;
    out->last = r->v[r->len - 1];
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A sample: few distinct values (ties), runs of one value (CARMA's idle windows), +-0,
 * negatives, uniform values and large ones. */
static float sample(uint64_t *s, float prev)
{
    uint64_t r = rng_next(s);
    switch (r % 8) {
    case 0:
    case 1: return prev;
    case 2: return (float)((r >> 8) % 5) / 4.0f;
    case 3: return (r >> 8) & 1 ? 0.0f : -0.0f;
    case 4: return -(float)((r >> 8) % 1000) / 7.0f;
    case 5: return (float)((r >> 8) % 100000) * 1e3f;
    default: return (float)((r >> 8) % 1000003) / 1000003.0f;
    }
}

static void assert_same_stats(const struct carma_window_stats *a,
                              const struct carma_window_stats *b)
{
    assert_int_equal(a->n, b->n);
    /* bit for bit: the same definitions computed the same way */
    assert_memory_equal(&a->mean, &b->mean, sizeof a->mean);
    assert_memory_equal(&a->median, &b->median, sizeof a->median);
    assert_memory_equal(&a->p95, &b->p95, sizeof a->p95);
    assert_memory_equal(&a->ema, &b->ema, sizeof a->ema);
    assert_memory_equal(&a->last, &b->last, sizeof a->last);
}

static void test_matches_brute_force_on_random_sequences(void **state)
{
    (void)state;
    static const uint32_t caps[] = {1, 2, 3, 4, 5, 7, 30, 31, 64, 119, CARMA_WINDOW_MAX};
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
        for (int round = 0; round < 40; round++) {
            struct carma_window w;
            carma_window_init(&w, caps[c]);
            struct ref r = {.cap = caps[c]};
            uint32_t steps = (uint32_t)(rng_next(&seed) % (4 * caps[c] + 3));
            float x = 0.5f;
            for (uint32_t i = 0; i < steps; i++) {
                if (rng_next(&seed) % 97 == 0) { /* now and then start over */
                    carma_window_clear(&w);
                    r.len = 0;
                }
                x = sample(&seed, x);
                carma_window_push(&w, x);
                ref_push(&r, x);
                struct carma_window_stats got, want;
                carma_window_stats(&w, &got);
                ref_stats(&r, &want);
                assert_same_stats(&got, &want);
                float risk = carma_window_risk(&w);
                float want_risk = want.n == 0 ? -1.0f
                                              : 0.2f * want.mean + 0.2f * want.median +
                                                    0.3f * want.p95 + 0.1f * want.median +
                                                    0.2f * want.ema;
                assert_memory_equal(&risk, &want_risk, sizeof risk);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_stats_hand_computed),
        cmocka_unit_test(test_ring_keeps_last_w),
        cmocka_unit_test(test_cap_clamped),
        cmocka_unit_test(test_matches_brute_force_on_random_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
