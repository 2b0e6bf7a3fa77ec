/* The time arguments of carma usage/report: the forms docs/monitoring.md lists, and
 * refusals that say why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/timearg.h"

static double parse_ok(const char *s, double now)
{
    double t = -1;
    struct carma_err err = {{0}};
    assert_int_equal(carma_time_parse(s, now, &t, &err), 0);
    return t;
}

static void refused(const char *s, const char *why)
{
    double t = -1;
    struct carma_err err = {{0}};
    assert_true(carma_time_parse(s, 1.7e9, &t, &err) < 0);
    if (!strstr(err.msg, why))
        fail_msg("'%s': message '%s' lacks '%s'", s, err.msg, why);
}

static void test_durations_back_from_now(void **state)
{
    (void)state;
    assert_true(parse_ok("now", 1.7e9) == 1.7e9);
    assert_true(parse_ok("30s", 1.7e9) == 1.7e9 - 30);
    assert_true(parse_ok("90m", 1.7e9) == 1.7e9 - 5400);
    assert_true(parse_ok("-90m", 1.7e9) == 1.7e9 - 5400); /* the sign says "ago" too */
    assert_true(parse_ok("1w", 1.7e9) == 1.7e9 - 604800);
    assert_true(parse_ok("@1700000000.5", 0) == 1700000000.5);
}

static void test_refusals_say_why(void **state)
{
    (void)state;
    refused("@99999999999999", "more than 12 digits");
    refused("@", "digits expected after '@'");
    refused("5y", "a time is now");
    refused("2026-02-30", "no such date");
    refused("", "empty time");
}

/* A wall-clock time the clocks skipped does not exist; mktime would move it. The rule is
 * a POSIX TZ string, so no time zone database is needed. */
static void test_daylight_saving_gap(void **state)
{
    (void)state;
    setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1);
    tzset();
    refused("2026-03-08T02:30", "no such local time");
    double a = parse_ok("2026-03-08T01:59", 0), b = parse_ok("2026-03-08T03:00", 0);
    assert_true(b - a == 60); /* 01:59 EST, then 03:00 EDT a minute later */
    unsetenv("TZ");
    tzset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations_back_from_now),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_daylight_saving_gap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
