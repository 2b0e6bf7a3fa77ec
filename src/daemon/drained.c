#include "daemon/drained.h"

#include <stdio.h>
#include <string.h>

/* Copies field f (m bytes) into dst (cap bytes) when it is 1..cap-1 printable ASCII
 * bytes (no tab); 0 when it is not. */
static int field_take(char *dst, size_t cap, const char *f, size_t m)
{
    if (m == 0 || m >= cap)
        return 0;
    for (size_t k = 0; k < m; k++)
        if ((unsigned char)f[k] < 0x20 || (unsigned char)f[k] > 0x7e)
            return 0;
    memcpy(dst, f, m);
    dst[m] = '\0';
    return 1;
}

size_t carmad_drained_parse(const char *text, size_t len, struct carmad_drained *out,
                            size_t cap, size_t *n,
                            void (*bad)(void *ctx, size_t line, const char *why), void *ctx)
{
    size_t skipped = 0, line = 0, pos = 0;
    *n = 0;
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t m = nl ? (size_t)(nl - s) : len - pos;
        pos += m + (nl != NULL);
        line++;
        if (m == 0)
            continue; /* an empty line */
        const char *why = NULL;
        const char *tab = memchr(s, '\t', m);
        struct carmad_drained e;
        if (!tab)
            why = "no tab between a GPU's UUID and the reason";
        else if (!field_take(e.uuid, sizeof e.uuid, s, (size_t)(tab - s)))
            why = "the UUID is empty, too long or not printable ASCII";
        else if (!field_take(e.reason, sizeof e.reason, tab + 1, m - (size_t)(tab - s) - 1))
            why = "the reason is empty, too long or not printable ASCII";
        for (size_t k = 0; !why && k < *n; k++)
            if (!strcmp(out[k].uuid, e.uuid))
                why = "a GPU named twice";
        if (!why && *n == cap)
            why = "more GPUs than carmad keeps";
        if (why) {
            skipped++;
            if (bad)
                bad(ctx, line, why);
            continue;
        }
        out[(*n)++] = e;
    }
    return skipped;
}

size_t carmad_drained_format(const struct carmad_drained *e, size_t n, char *buf, size_t cap)
{
    size_t w = 0;
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        int l = snprintf(buf + w, cap - w, "%s\t%s\n", e[k].uuid, e[k].reason);
        if (l < 0 || (size_t)l >= cap - w) {
            buf[0] = '\0';
            return 0;
        }
        w += (size_t)l;
    }
    return w;
}
