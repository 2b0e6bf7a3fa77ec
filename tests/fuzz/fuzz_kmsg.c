/* Fuzz target: one /dev/kmsg record as carmad reads it for the NVRM Xid lines
 * (daemon/kmsg.h). Whatever is taken for an Xid record has a PCI location, a pid and
 * an Xid the line can hold; the same bytes parse the same way again, and NVML's bus id
 * parser never reads past a NUL. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/kmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char rec[CARMAD_KMSG_RECORD_MAX + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CARMAD_KMSG_RECORD_MAX + 1)
        size = CARMAD_KMSG_RECORD_MAX + 1;
    memcpy(rec, data, size);
    struct carmad_kmsg_xid x, y;
    memset(&x, 0, sizeof x); /* padding compared below */
    memset(&y, 0, sizeof y);
    int r = carmad_kmsg_parse(rec, size, &x);
    if (r != 0 && r != 1)
        __builtin_trap();
    if (r) {
        if (size > CARMAD_KMSG_RECORD_MAX || x.bus > 0xff || x.device > 0x1f || x.pid < 0 ||
            x.pid > 4194304 || x.xid > 9999999999ull || !memmem(rec, size, "NVRM: Xid (", 11))
            __builtin_trap();
        if (carmad_kmsg_parse(rec, size, &y) != 1 || memcmp(&x, &y, sizeof x))
            __builtin_trap();
    }
    /* the record's bytes as a bus id, cut at its first NUL */
    char id[64];
    size_t n = size < sizeof id - 1 ? size : sizeof id - 1;
    memcpy(id, data, n);
    id[n] = '\0';
    uint32_t d, b, v;
    if (carmad_kmsg_pci_parse(id, &d, &b, &v) == 0 && (b > 0xff || v > 0x1f || strlen(id) < 12))
        __builtin_trap();
    return 0;
}
