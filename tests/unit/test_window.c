/* Window statistics against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_stats_hand_computed),
        cmocka_unit_test(test_ring_keeps_last_w),
        cmocka_unit_test(test_cap_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
