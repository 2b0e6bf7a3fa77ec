#include "util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t carma_utf8_seq(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c == 0)
        return 0;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    unsigned char lo = 0x80, hi = 0xbf;
    size_t len;
    if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* no overlongs */
        else if (c == 0xed)
            hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f; /* at most U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xc0) != 0x80) /* a NUL stops here too */
            return 0;
    return len;
}

size_t carma_utf8_cut(char *s, size_t n)
{
    size_t i = n, k = 0; /* k continuation bytes at the end */
    while (i > 0 && k < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) {
        i--;
        k++;
    }
    if (i == 0)
        return n;
    unsigned char c = (unsigned char)s[i - 1];
    size_t need = c >= 0xf0 && c <= 0xf4   ? 4
                  : c >= 0xe0 && c <= 0xef ? 3
                  : c >= 0xc2 && c <= 0xdf ? 2
                                           : 0;
    if (need == 0 || k + 1 >= need)
        return n;
    s[i - 1] = '\0';
    return i - 1;
}

char *carma_utf8_lossy(const char *s)
{
    size_t n = strlen(s);
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * n + 1), *o = out; /* each bad byte becomes 3 */
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t l = carma_utf8_seq(p);
        if (l == 0) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
        } else {
            memcpy(o, p, l);
            o += l;
            p += l;
        }
    }
    *o = '\0';
    return out;
}

uint32_t carma_utf8_code_point(const unsigned char *p, size_t l)
{
    switch (l) {
    case 1:
        return p[0];
    case 2:
        return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
    case 3:
        return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
    case 4:
        return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
               (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
    default:
        return 0;
    }
}
