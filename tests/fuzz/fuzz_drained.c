/* Fuzz target: STATE/drained, the GPUs carmad keeps drained over a restart
 * (daemon/drained.h). Whatever is accepted is written back as text that parses to the
 * same entries, with nothing skipped. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/drained.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct carmad_drained a[CARMAD_DRAINED_MAX], b[CARMAD_DRAINED_MAX];
static char text[CARMAD_DRAINED_FILE_MAX];

static void said(void *ctx, size_t line, const char *why)
{
    if (!line || !why || !why[0])
        __builtin_trap();
    ++*(size_t *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CARMAD_DRAINED_FILE_MAX)
        size = CARMAD_DRAINED_FILE_MAX;
    size_t na = 0, nb = 0, bad = 0;
    size_t skipped = carmad_drained_parse((const char *)data, size, a, CARMAD_DRAINED_MAX, &na,
                                          said, &bad);
    if (skipped != bad || na > CARMAD_DRAINED_MAX)
        __builtin_trap();
    size_t len = carmad_drained_format(a, na, text, sizeof text);
    if (na && !len)
        __builtin_trap(); /* every accepted set fits */
    if (carmad_drained_parse(text, len, b, CARMAD_DRAINED_MAX, &nb, NULL, NULL) != 0 || nb != na)
        __builtin_trap();
    for (size_t k = 0; k < na; k++)
        if (strcmp(a[k].uuid, b[k].uuid) || strcmp(a[k].reason, b[k].reason))
            __builtin_trap();
    return 0;
}
