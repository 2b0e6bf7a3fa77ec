/* Placement policies behind one interface. The reference policies reproduce CARMA
 * (DESIGN.md §9) exactly and differ only in their descriptor; `auto` is carma's own.
 * Names are the CLI's and the JSON's. */
#ifndef CARMA_CORE_POLICY_H
#define CARMA_CORE_POLICY_H

#include <stddef.h>
#include <stdint.h>

enum carma_policy_kind {
    CARMA_POLICY_REFERENCE, /* CARMA's loop: 1 s ticks, head only, idle preamble, grace */
    CARMA_POLICY_AUTO,      /* carma: bounds, ramp reservations, backfill, interference */
};

enum carma_order {
    CARMA_ORDER_NONE, /* exclusive: idle GPUs only */
    CARMA_ORDER_FF,   /* first fit, index order */
    CARMA_ORDER_BF,   /* best fit: least free memory */
    CARMA_ORDER_MAGM, /* most available GPU memory */
    CARMA_ORDER_LUG,  /* least utilised GPU: lowest SMACT risk */
    CARMA_ORDER_RR,   /* round robin, no gate */
};

enum carma_requirement {
    CARMA_REQ_NONE,   /* or-*: rely on recovery, only a free-memory floor */
    CARMA_REQ_ORACLE, /* the measured peak (job->mem_mib filled from the truth) */
    CARMA_REQ_EST,    /* an estimator's answer (job->mem_mib filled from it) */
};

#define CARMA_POLICY_NEEDS_WINDOW 1u /* reads monitor windows (SMACT/SMOCC/DRAMA) */
#define CARMA_POLICY_TICK_1S 2u      /* decides on a 1 s loop, not only on events */

struct carma_policy {
    const char *name;
    const char *summary;
    uint8_t kind;  /* enum carma_policy_kind */
    uint8_t order; /* enum carma_order */
    uint8_t req;   /* enum carma_requirement */
    uint8_t gated; /* applies the memory + SMACT/SMOCC/DRAMA gate */
    uint32_t flags;
};

/* NULL when unknown. */
const struct carma_policy *carma_policy_find(const char *name);
/* Every policy, `auto` first. */
const struct carma_policy *carma_policy_all(size_t *n);
/* Writes every policy's name into buf, comma-separated ("auto, exclusive, ..."), cut to
 * fit cap (> 0) and NUL-terminated, for an error that names what is known. */
void carma_policy_names(char *buf, size_t cap);

#endif
