/* GPUs drained by an Xid that needs a GPU reset or by an administrator (carma drain),
 * kept over carmad's restarts in STATE/drained (docs/daemon.md, "Xid events" and
 * "Draining a GPU by hand"): one line per GPU, "UUID<TAB>reason". carmad adds a GPU's
 * line when it drains it and removes it at `carma undrain`. Pure: no I/O here. */
#ifndef CARMA_DAEMON_DRAINED_H
#define CARMA_DAEMON_DRAINED_H

#include <stddef.h>

#define CARMAD_DRAINED_MAX 256    /* GPUs the file names at most */
#define CARMAD_DRAINED_UUID 96    /* bytes of a UUID with its NUL (CARMA_GPU_UUID_MAX) */
#define CARMAD_DRAINED_REASON 256 /* bytes of a reason with its NUL */
/* the text of CARMAD_DRAINED_MAX lines of the longest (tab and newline in the fields' NULs'
 * room) and a NUL: what carmad_drained_format needs at most, and the bytes read of the file
 * at most */
#define CARMAD_DRAINED_FILE_MAX                                                                    \
    (CARMAD_DRAINED_MAX * (CARMAD_DRAINED_UUID + CARMAD_DRAINED_REASON) + 1)
#define CARMAD_DRAINED_USER 32 /* bytes of a user name a manual reason keeps */

struct carmad_drained {
    char uuid[CARMAD_DRAINED_UUID];     /* as NVML gives it */
    char reason[CARMAD_DRAINED_REASON]; /* "reported Xid 48 (double-bit ECC error)",
                                           "drained by root at 2025-05-01T10:00:00Z: fan" */
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

/* Adds GPU uuid's line with reason to e[0..*n) (cap entries) unless one names it: 1 when
 * added, 0 when it was there (its reason kept), -ENOSPC when full, -EINVAL when uuid or
 * reason would not parse back (empty, too long, not printable ASCII). */
int carmad_drained_add(struct carmad_drained *e, size_t *n, size_t cap, const char *uuid,
                       const char *reason);

/* Removes GPU uuid's line from e[0..*n), keeping the others' order: 1 when removed, 0
 * when no line names it. */
int carmad_drained_remove(struct carmad_drained *e, size_t *n, const char *uuid);

/* The reason of an administrator's drain into out (cap bytes, at least
 * CARMAD_DRAINED_REASON): "drained by USER at YYYY-MM-DDTHH:MM:SSZ", then ": TEXT" when
 * text is not NULL; user cut to CARMAD_DRAINED_USER bytes, t seconds since the epoch
 * (UTC). A byte of user or text that is not printable ASCII becomes '?', and the result is
 * cut to cap - 1 bytes, so that it is always a reason STATE/drained keeps. Returns its
 * length. */
size_t carmad_drained_manual_reason(char *out, size_t cap, const char *user, double t,
                                    const char *text);

#endif
