#include "daemon/drained.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
        /* a line an editor ended in CR LF: its GPU stays drained (the CR would make the
         * reason unreadable, the line ignored, and a GPU that needs a reset in service) */
        if (m > 0 && s[m - 1] == '\r')
            m--;
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

/* Whether s is a field field_take keeps in cap bytes. */
static int field_ok(const char *s, size_t cap)
{
    char tmp[CARMAD_DRAINED_REASON];
    size_t m = strnlen(s, cap);
    return cap <= sizeof tmp && field_take(tmp, cap, s, m);
}

int carmad_drained_add(struct carmad_drained *e, size_t *n, size_t cap, const char *uuid,
                       const char *reason)
{
    if (!field_ok(uuid, sizeof e->uuid) || !field_ok(reason, sizeof e->reason))
        return -EINVAL;
    for (size_t k = 0; k < *n; k++)
        if (!strcmp(e[k].uuid, uuid))
            return 0;
    if (*n >= cap)
        return -ENOSPC;
    snprintf(e[*n].uuid, sizeof e[*n].uuid, "%s", uuid);
    snprintf(e[*n].reason, sizeof e[*n].reason, "%s", reason);
    ++*n;
    return 1;
}

int carmad_drained_remove(struct carmad_drained *e, size_t *n, const char *uuid)
{
    for (size_t k = 0; k < *n; k++)
        if (!strcmp(e[k].uuid, uuid)) {
            memmove(&e[k], &e[k + 1], (*n - k - 1) * sizeof *e);
            --*n;
            return 1;
        }
    return 0;
}

/* Appends at most max bytes of s to out[*w..cap-1), each byte that is not printable ASCII
 * as '?'. */
static void put_printable(char *out, size_t cap, size_t *w, const char *s, size_t max)
{
    for (size_t k = 0; s[k] && k < max && *w + 1 < cap; k++) {
        unsigned char c = (unsigned char)s[k];
        out[(*w)++] = c >= 0x20 && c <= 0x7e ? (char)c : '?';
    }
    out[*w] = '\0';
}

size_t carmad_drained_manual_reason(char *out, size_t cap, const char *user, double t,
                                    const char *text)
{
    if (cap == 0)
        return 0;
    size_t w = 0;
    out[0] = '\0';
    put_printable(out, cap, &w, "drained by ", SIZE_MAX);
    put_printable(out, cap, &w, user && user[0] ? user : "?", CARMAD_DRAINED_USER);
    char when[40] = "";
    time_t s = t >= 0 && t < 253402300800.0 ? (time_t)t : 0;
    struct tm tm;
    if (gmtime_r(&s, &tm))
        strftime(when, sizeof when, " at %Y-%m-%dT%H:%M:%SZ", &tm);
    put_printable(out, cap, &w, when, SIZE_MAX);
    if (text) {
        put_printable(out, cap, &w, ": ", SIZE_MAX);
        put_printable(out, cap, &w, text, SIZE_MAX);
    }
    return w;
}
