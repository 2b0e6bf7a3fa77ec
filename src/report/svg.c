/* Drawing primitives of the report module (see svg.h). */
#include "report/svg.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when p does not start one.
 * C0 and C1 controls other than tab and newline count as invalid: they have no
 * business in a page. Never reads past a NUL. */
static size_t utf8_seq(const unsigned char *p)
{
    size_t l = carma_utf8_seq(p);
    if (l == 1 && !((p[0] >= 0x20 && p[0] != 0x7f) || p[0] == '\t' || p[0] == '\n'))
        return 0;
    if (l == 2 && p[0] == 0xc2 && p[1] < 0xa0)
        return 0; /* C1 controls */
    return l;
}

size_t carma_svg_text_chars(const char *s)
{
    size_t n = 0;
    if (!s)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
        size_t l = utf8_seq(p);
        p += l ? l : 1;
    }
    return n;
}

void carma_svg_text_write(FILE *f, const char *s, size_t max_chars)
{
    if (!s)
        return;
    size_t limit = SIZE_MAX;
    int cut = 0;
    if (max_chars > 0 && carma_svg_text_chars(s) > max_chars) {
        limit = max_chars - 1;
        cut = 1;
    }
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < limit; n++) {
        size_t l = utf8_seq(p);
        if (l == 0) {
            fputs("\xef\xbf\xbd", f);
            p++;
            continue;
        }
        if (l == 1) {
            switch (*p) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs("&#39;", f);
                break;
            default:
                fputc(*p, f);
            }
        } else {
            fwrite(p, 1, l, f);
        }
        p += l;
    }
    if (cut)
        fputs("\xe2\x80\xa6", f);
}

size_t carma_svg_num_format(char *buf, size_t cap, double v, int decimals)
{
    static const long long pow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    if (decimals < 0)
        decimals = 0;
    if (decimals > 6)
        decimals = 6;
    if (!isfinite(v))
        v = 0;
    if (v > 1e12)
        v = 1e12;
    if (v < -1e12)
        v = -1e12;
    long long scale = pow10[decimals];
    long long q = llround(v * (double)scale);
    unsigned long long uq = q < 0 ? (unsigned long long)(-q) : (unsigned long long)q;
    unsigned long long ip = uq / (unsigned long long)scale;
    unsigned long long fp = uq % (unsigned long long)scale;
    char tmp[48];
    int n = snprintf(tmp, sizeof tmp, "%s%llu", q < 0 ? "-" : "", ip);
    if (fp) {
        char frac[24];
        snprintf(frac, sizeof frac, "%0*llu", decimals, fp);
        size_t fl = strlen(frac);
        while (fl > 0 && frac[fl - 1] == '0')
            frac[--fl] = 0;
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, ".%s", frac);
    }
    if (cap > 0)
        snprintf(buf, cap, "%s", tmp);
    return (size_t)n;
}

void carma_svg_num_write(FILE *f, double v, int decimals)
{
    char b[48];
    carma_svg_num_format(b, sizeof b, v, decimals);
    fputs(b, f);
}

size_t carma_svg_duration_format(char *buf, size_t cap, double s)
{
    if (!isfinite(s) || s < 0)
        s = 0;
    if (s > 1e12)
        s = 1e12;
    int n;
    if (s < 59.95) {
        char num[48];
        carma_svg_num_format(num, sizeof num, s, 1);
        n = snprintf(buf, cap, "%ss", num);
    } else {
        unsigned long long t = (unsigned long long)llround(s);
        unsigned long long d = t / 86400, h = t / 3600, m = t / 60 % 60, sec = t % 60;
        if (t < 3600)
            n = snprintf(buf, cap, "%llum%02llus", m, sec);
        else if (t < 48 * 3600)
            n = snprintf(buf, cap, "%lluh%02llum%02llus", h, m, sec);
        else
            n = snprintf(buf, cap, "%llud%02lluh%02llum", d, h % 24, m);
    }
    return n < 0 ? 0 : (size_t)n;
}

size_t carma_svg_tick_format(char *buf, size_t cap, double t, double step)
{
    if (!isfinite(t) || t < 0)
        t = 0;
    if (t > 1e12)
        t = 1e12;
    unsigned long long u = (unsigned long long)llround(t);
    unsigned long long d = u / 86400, h = u / 3600, m = u / 60 % 60, s = u % 60;
    int n;
    if (u == 0)
        n = snprintf(buf, cap, "0");
    else if (step >= 86400 && u % 3600 == 0)
        n = h % 24 ? snprintf(buf, cap, "%llud%lluh", d, h % 24) : snprintf(buf, cap, "%llud", d);
    else if (u >= 3600 && s == 0)
        n = m ? snprintf(buf, cap, "%lluh%02llum", h, m) : snprintf(buf, cap, "%lluh", h);
    else if (u >= 3600)
        n = snprintf(buf, cap, "%lluh%02llum%02llus", h, m, s);
    else if (u >= 60)
        n = s ? snprintf(buf, cap, "%llum%02llus", m, s) : snprintf(buf, cap, "%llum", m);
    else
        n = snprintf(buf, cap, "%llus", s);
    return n < 0 ? 0 : (size_t)n;
}

double carma_svg_tick_step(double span_s, int max_ticks)
{
    static const double steps[] = {1,     2,     5,     10,    15,     30,    60,
                                   120,   300,   600,   900,   1800,   3600,  7200,
                                   10800, 21600, 43200, 86400, 172800, 604800};
    if (!isfinite(span_s) || span_s <= 0 || max_ticks < 1)
        return 1;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (span_s / steps[i] <= max_ticks)
            return steps[i];
    double s = steps[sizeof steps / sizeof steps[0] - 1];
    while (span_s / s > max_ticks)
        s *= 2;
    return s;
}

static int present(float v)
{
    return isfinite(v) && v >= 0;
}

size_t carma_svg_series_downsample(const double *t, const float *v, size_t n, double t0, double t1,
                                   size_t nbuckets, double *out_t, float *out_v)
{
    assert(nbuckets >= 1 && t1 > t0);
    size_t o = 0;
    if (n <= 2 * nbuckets) {
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(t[i]))
                continue;
            out_t[o] = t[i];
            out_v[o++] = present(v[i]) ? v[i] : -1.0f;
        }
        return o;
    }
    double per = (double)nbuckets / (t1 - t0);
    size_t cur = 0;
    int seen = 0, has = 0, first_absent = 0, last_absent = 0;
    size_t imin = 0, imax = 0, iabs_first = 0, iabs_last = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t b = cur;
        if (i < n) {
            if (!isfinite(t[i]))
                continue;
            double x = (t[i] - t0) * per;
            b = x <= 0 ? 0 : x >= (double)nbuckets ? nbuckets - 1 : (size_t)x;
            if (b < cur) /* out of order: stays in the current bucket */
                b = cur;
        }
        if (seen && (i == n || b != cur)) {
            if (first_absent && has) {
                out_t[o] = t[iabs_first];
                out_v[o++] = -1.0f;
            }
            if (has) {
                size_t a = imin < imax ? imin : imax, z = imin < imax ? imax : imin;
                out_t[o] = t[a];
                out_v[o++] = v[a];
                if (z != a) {
                    out_t[o] = t[z];
                    out_v[o++] = v[z];
                }
            }
            if (last_absent) {
                out_t[o] = t[iabs_last];
                out_v[o++] = -1.0f;
            }
            seen = has = first_absent = last_absent = 0;
        }
        if (i == n)
            break;
        cur = b;
        if (present(v[i])) {
            if (!has || v[i] < v[imin])
                imin = i;
            if (!has || v[i] > v[imax])
                imax = i;
            has = 1;
            last_absent = 0;
        } else {
            if (!seen) {
                first_absent = 1;
                iabs_first = i;
            }
            last_absent = 1;
            iabs_last = i;
        }
        seen = 1;
    }
    assert(o <= 4 * nbuckets);
    return o;
}
