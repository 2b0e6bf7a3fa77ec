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

static uint64_t dur_ok(const char *s)
{
    uint64_t v = 0;
    struct carma_err err = {{0}};
    if (carma_duration_parse(s, 1, 365u * 86400u, &v, &err))
        fail_msg("'%s' refused: %s", s, err.msg);
    return v;
}

static void dur_refused(const char *s, const char *why)
{
    uint64_t v = 7;
    struct carma_err err = {{0}};
    assert_true(carma_duration_parse(s, 1, 365u * 86400u, &v, &err) < 0);
    assert_true(v == 7);
    if (!strstr(err.msg, why))
        fail_msg("'%s': message '%s' lacks '%s'", s, err.msg, why);
}

/* carma submit --time-limit's grammar: d/h/m/s groups in that order; a bare number is
 * refused (Slurm's --time reads 90 as minutes). */
static void test_duration_forms(void **state)
{
    (void)state;
    dur_refused("90", "a unit is needed: 90s or 90m (Slurm's --time reads a bare number");
    assert_true(dur_ok("90s") == 90);
    assert_true(dur_ok("45m") == 2700);
    assert_true(dur_ok("2h") == 7200);
    assert_true(dur_ok("1d12h") == 129600);
    assert_true(dur_ok("1h30m") == 5400);
    assert_true(dur_ok("2h0m5s") == 7205);
    assert_true(dur_ok("365d") == 365u * 86400u);
    assert_true(dur_ok("1s") == 1);
    dur_refused("", "empty");
    dur_refused("0", "a unit is needed");
    dur_refused("0s", "out of range");
    dur_refused("365d1s", "more than the most");
    dur_refused("99999999999999999999999", "more than the most");
    dur_refused("2x", "unknown unit 'x'");
    dur_refused("2h3", "unit (d, h, m or s) missing");
    dur_refused("30m2h", "out of order");
    dur_refused("1h1h", "repeated");
    dur_refused("-5", "'-' where digits");
    dur_refused("1.5h", "unknown unit '.'");
    dur_refused(" 5", "' ' where digits");
    dur_refused("h", "'h' where digits");
    char buf[32];
    static const uint64_t back[] = {1, 59, 60, 90, 3600, 7200, 129600, 7205, 365u * 86400u};
    for (size_t k = 0; k < sizeof back / sizeof *back; k++) {
        carma_duration_format(buf, sizeof buf, back[k]);
        assert_true(dur_ok(buf) == back[k]);
    }
    carma_duration_format(buf, sizeof buf, 129600);
    assert_string_equal(buf, "1d12h");
    carma_duration_format(buf, sizeof buf, 90);
    assert_string_equal(buf, "1m30s");
    carma_duration_format(buf, sizeof buf, 0);
    assert_string_equal(buf, "0s");
    assert_true(carma_duration_format(buf, 4, 129600) == 5 && !strcmp(buf, "1d1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations_back_from_now),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_daylight_saving_gap),
        cmocka_unit_test(test_duration_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
