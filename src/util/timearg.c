#include "util/timearg.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Reads exactly n decimal digits at *p into *v. */
static int digits(const char **p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        x = x * 10 + (c - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return d[m - 1];
}

int carma_time_parse(const char *s, double now, double *out, struct carma_err *err)
{
    if (!s || !*s)
        return carma_err_set(err, -EINVAL, "empty time");
    size_t len = strnlen(s, CARMA_TIMEARG_MAX + 1);
    if (len > CARMA_TIMEARG_MAX)
        return carma_err_set(err, -EINVAL, "time longer than %d characters", CARMA_TIMEARG_MAX);
    if (!strcmp(s, "now")) {
        *out = now;
        return 0;
    }
    const char *p = s;
    if (*p == '@') {
        p++;
        double x = 0;
        int nd = 0;
        while (*p >= '0' && *p <= '9' && nd < 12) {
            x = x * 10 + (*p++ - '0');
            nd++;
        }
        if (nd == 0)
            return carma_err_set(err, -EINVAL, "'%s': digits expected after '@'", s);
        if (*p >= '0' && *p <= '9')
            return carma_err_set(err, -EINVAL, "'%s': more than 12 digits of seconds", s);
        if (*p == '.') {
            p++;
            double f = 0.1;
            int nf = 0;
            while (*p >= '0' && *p <= '9' && nf < 9) {
                x += f * (*p++ - '0');
                f /= 10;
                nf++;
            }
            if (nf == 0)
                return carma_err_set(err, -EINVAL, "'%s': digits expected after '.'", s);
        }
        if (*p)
            return carma_err_set(err, -EINVAL, "'%s': unexpected '%c'", s, *p);
        if (x > 253402300799.0)
            return carma_err_set(err, -EINVAL, "'%s': after the year 9999", s);
        *out = x;
        return 0;
    }
    /* A duration back from now: digits then one unit. */
    const char *q = p + (*p == '-');
    size_t nd = strspn(q, "0123456789");
    if (nd > 0 && nd <= 9 && q[nd] && !q[nd + 1] && strchr("smhdw", q[nd])) {
        double n = 0;
        for (size_t i = 0; i < nd; i++)
            n = n * 10 + (q[i] - '0');
        static const double unit[] = {1, 60, 3600, 86400, 604800};
        n *= unit[strchr("smhdw", q[nd]) - "smhdw"];
        if (n > 100.0 * 365 * 86400)
            return carma_err_set(err, -EINVAL, "'%s': more than 100 years", s);
        *out = now - n;
        if (*out < 0)
            return carma_err_set(err, -EINVAL, "'%s': before 1970", s);
        return 0;
    }
    int y, mo, d, h = 0, mi = 0, se = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
        digits(&p, 2, &d))
        return carma_err_set(err, -EINVAL,
                             "'%s': a time is now, @EPOCH, 90m/2h/7d (ago), YYYY-MM-DD or "
                             "YYYY-MM-DDTHH:MM[:SS]", s);
    if (*p == 'T' || *p == ' ') {
        p++;
        if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
            return carma_err_set(err, -EINVAL, "'%s': HH:MM expected after the date", s);
        if (*p == ':') {
            p++;
            if (digits(&p, 2, &se))
                return carma_err_set(err, -EINVAL, "'%s': seconds expected after ':'", s);
        }
    }
    if (*p)
        return carma_err_set(err, -EINVAL, "'%s': unexpected text '%.16s'", s, p);
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
        mi > 59 || se > 59)
        return carma_err_set(err, -EINVAL, "'%s': no such date or time", s);
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1 || t < 0)
        return carma_err_set(err, -EINVAL, "'%s': not a representable local time", s);
    /* mktime moves a wall-clock time the clocks skipped (a daylight-saving gap) */
    if (tm.tm_hour != h || tm.tm_min != mi || tm.tm_mday != d)
        return carma_err_set(err, -EINVAL,
                             "'%s': no such local time (the clocks skipped it that day)", s);
    *out = (double)t;
    return 0;
}

int carma_duration_parse(const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
                         struct carma_err *err)
{
    static const char units[] = "dhms";
    static const uint64_t mult[] = {86400, 3600, 60, 1};
    if (!s[0])
        return carma_err_set(err, -EINVAL, "an empty length of time");
    if (strlen(s) > CARMA_TIMEARG_MAX)
        return carma_err_set(err, -EINVAL, "'%.16s...': longer than %d characters", s,
                             CARMA_TIMEARG_MAX);
    const char *p = s;
    uint64_t total = 0;
    size_t next = 0; /* the first unit still allowed */
    int groups = 0;
    while (*p) {
        if (*p < '0' || *p > '9')
            return carma_err_set(err, -EINVAL,
                                 "'%s': '%c' where digits were expected (forms: 90s, 45m, 2h, "
                                 "1d12h)",
                                 s, *p);
        uint64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            uint64_t dg = (uint64_t)(*p++ - '0');
            if (hi < dg || n > (hi - dg) / 10) /* n * 10 + dg > hi, without overflow */
                return carma_err_set(err, -EINVAL, "'%s': more than the most, %llu s", s,
                                     (unsigned long long)hi);
            n = n * 10 + dg;
        }
        if (!*p && !groups) /* Slurm's --time reads 90 as minutes: a unit says which */
            return carma_err_set(err, -EINVAL,
                                 "'%s': a unit is needed: %ss or %sm (Slurm's --time reads a "
                                 "bare number as minutes)",
                                 s, s, s);
        const char *u = *p ? strchr(units, *p) : NULL;
        if (!u)
            return carma_err_set(err, -EINVAL,
                                 *p ? "'%s': unknown unit '%c' (d, h, m or s)"
                                    : "'%s': a unit (d, h, m or s) missing after the last number",
                                 s, *p);
        size_t k = (size_t)(u - units);
        if (k < next)
            return carma_err_set(err, -EINVAL,
                                 "'%s': unit '%c' repeated or out of order (d, h, m, s in that "
                                 "order, each once)",
                                 s, *p);
        next = k + 1;
        p++;
        groups++;
        if (n > (hi - total) / mult[k]) /* total + n * mult > hi, without overflow */
            return carma_err_set(err, -EINVAL, "'%s': more than the most, %llu s", s,
                                 (unsigned long long)hi);
        total += n * mult[k];
    }
    if (total < lo || total > hi)
        return carma_err_set(err, -EINVAL, "'%s': %llu s, out of range [%llu s, %llu s]", s,
                             (unsigned long long)total, (unsigned long long)lo,
                             (unsigned long long)hi);
    *out = total;
    return 0;
}

size_t carma_duration_format(char *buf, size_t cap, uint64_t secs)
{
    static const char units[] = "dhms";
    static const uint64_t mult[] = {86400, 3600, 60, 1};
    size_t len = 0;
    if (cap)
        buf[0] = 0;
    if (!secs)
        return (size_t)snprintf(buf, cap, "0s");
    for (size_t k = 0; k < 4; k++) {
        uint64_t n = secs / mult[k];
        secs %= mult[k];
        if (!n)
            continue;
        int w = snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, "%llu%c",
                         (unsigned long long)n, units[k]);
        len += w > 0 ? (size_t)w : 0;
    }
    return len;
}
