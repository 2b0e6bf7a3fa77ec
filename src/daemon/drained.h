/* GPUs drained by an Xid that needs a GPU reset, kept over carmad's restarts in
 * STATE/drained (docs/daemon.md, "Xid events"): one line per GPU, "UUID<TAB>reason".
 * carmad adds a GPU's line when it drains it; an administrator removes it (or the file)
 * once the GPU is reset, then restarts carmad. Pure: no I/O here. */
#ifndef CARMA_DAEMON_DRAINED_H
#define CARMA_DAEMON_DRAINED_H

#include <stddef.h>

#define CARMAD_DRAINED_MAX 256            /* GPUs the file names at most */
#define CARMAD_DRAINED_FILE_MAX (64u << 10) /* bytes read of it at most */

struct carmad_drained {
    char uuid[96];    /* as NVML gives it (CARMA_GPU_UUID_MAX) */
    char reason[128]; /* "reported Xid 48 (double-bit ECC error)" */
};

/* Parses the file's text (len bytes, need not end in NUL or a newline) into out[0..cap),
 * *n their count. A malformed line (no tab; an empty, too long or non-printable-ASCII UUID
 * or reason; a UUID named twice) and a line past cap are skipped, each said through
 * bad(ctx, line number, why) when bad is not NULL. Returns the number skipped. */
size_t carmad_drained_parse(const char *text, size_t len, struct carmad_drained *out,
                            size_t cap, size_t *n,
                            void (*bad)(void *ctx, size_t line, const char *why), void *ctx);

/* The file's text for e[0..n) into buf (cap bytes, NUL-terminated); its length, or 0 when
 * it does not fit. */
size_t carmad_drained_format(const struct carmad_drained *e, size_t n, char *buf, size_t cap);

#endif
