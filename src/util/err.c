#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/utf8.h"

int carma_err_at(struct carma_err *err, const char *file, size_t line, const char *fmt, ...)
{
    if (!err)
        return -EINVAL;
    int n = 0;
    if (file && line)
        n = snprintf(err->msg, sizeof err->msg, "%s:%zu: ", file, line);
    else if (file)
        n = snprintf(err->msg, sizeof err->msg, "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof err->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (m > 0 && (size_t)m >= sizeof err->msg - (size_t)n) /* cut: at a whole character */
        carma_utf8_cut(err->msg, strlen(err->msg));
    return -EINVAL;
}

int carma_err_set(struct carma_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (m > 0 && (size_t)m >= sizeof err->msg) /* cut: at a whole character */
        carma_utf8_cut(err->msg, sizeof err->msg - 1);
    return code;
}

/* Whether the character at p (n bytes of well-formed UTF-8, 0: none) is a control (C0,
 * DEL, C1) or not well-formed. */
static int is_control(const unsigned char *p, size_t n)
{
    return n == 0 || p[0] < 0x20 || p[0] == 0x7f || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

int carma_text_has_control(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = carma_utf8_seq(p);
        if (is_control(p, n))
            return 1;
        p += n;
    }
    return 0;
}

struct carma_quoted carma_quote(const char *s, size_t max)
{
    struct carma_quoted q;
    size_t o = 0, i = 0;
    if (max > CARMA_QUOTE_MAX)
        max = CARMA_QUOTE_MAX;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (p[i]) {
        size_t n = carma_utf8_seq(p + i);
        int esc = is_control(p + i, n) || p[i] == '\\';
        if (n == 0)
            n = 1;
        if (i + n > max)
            break;
        /* U+FEFF, a byte order mark out of place (files joined), is invisible */
        if (n == 3 && p[i] == 0xef && p[i + 1] == 0xbb && p[i + 2] == 0xbf) {
            memcpy(q.s + o, "\\uFEFF", 6);
            o += 6;
            i += n;
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            unsigned char ch = p[i + k];
            if (!esc) {
                q.s[o++] = (char)ch;
            } else if (ch == '\n' || ch == '\r' || ch == '\t' || ch == '\\') {
                q.s[o++] = '\\';
                q.s[o++] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch == '\t' ? 't' : '\\';
            } else {
                static const char hex[] = "0123456789ABCDEF";
                q.s[o++] = '\\';
                q.s[o++] = 'x';
                q.s[o++] = hex[ch >> 4];
                q.s[o++] = hex[ch & 15];
            }
        }
        i += n;
    }
    if (p[i]) {
        memcpy(q.s + o, "...", 3);
        o += 3;
    }
    q.s[o] = '\0';
    return q;
}

struct carma_num carma_num(double v)
{
    struct carma_num r;
    char g[32];
    snprintf(g, sizeof g, "%g", v);
    size_t o = 0;
    for (const char *p = g; *p && o + 1 < sizeof r.s; p++) {
        r.s[o++] = *p;
        if (*p == 'e') { /* "e+07" -> "e7", "e-05" -> "e-5" */
            if (p[1] == '+' || p[1] == '-')
                p++;
            if (*p == '-')
                r.s[o++] = '-';
            while (p[1] == '0' && p[2])
                p++;
        }
    }
    r.s[o] = '\0';
    return r;
}
