#include "core/policy.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define REF (CARMA_POLICY_NEEDS_WINDOW | CARMA_POLICY_TICK_1S)

static const struct carma_policy policies[] = {
    {"auto", "carma: memory bounds with ramp reservations, backfill, interference model",
     CARMA_POLICY_AUTO, CARMA_ORDER_NONE, CARMA_REQ_EST, 0, 0},
    {"exclusive", "one job per GPU, FIFO (no collocation)", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_NONE, CARMA_REQ_NONE, 0, CARMA_POLICY_TICK_1S},
    {"oracle-ff", "CARMA first fit, measured peak", CARMA_POLICY_REFERENCE, CARMA_ORDER_FF,
     CARMA_REQ_ORACLE, 1, REF},
    {"oracle-bf", "CARMA best fit (least free memory), measured peak", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_BF, CARMA_REQ_ORACLE, 1, REF},
    {"oracle-magm", "CARMA most available memory, measured peak", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_MAGM, CARMA_REQ_ORACLE, 1, REF},
    {"oracle-lug", "CARMA least utilised GPU, measured peak", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_LUG, CARMA_REQ_ORACLE, 1, REF},
    {"or-rr", "CARMA round robin, no gate, rely on recovery", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_RR, CARMA_REQ_NONE, 0, CARMA_POLICY_TICK_1S},
    {"or-magm", "CARMA most available memory, no requirement, rely on recovery",
     CARMA_POLICY_REFERENCE, CARMA_ORDER_MAGM, CARMA_REQ_NONE, 1, REF},
    {"or-lug", "CARMA least utilised GPU, no requirement, rely on recovery",
     CARMA_POLICY_REFERENCE, CARMA_ORDER_LUG, CARMA_REQ_NONE, 1, REF},
    {"est-magm", "CARMA most available memory, estimator's requirement", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_MAGM, CARMA_REQ_EST, 1, REF},
    {"est-lug", "CARMA least utilised GPU, estimator's requirement", CARMA_POLICY_REFERENCE,
     CARMA_ORDER_LUG, CARMA_REQ_EST, 1, REF},
};

const struct carma_policy *carma_policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        if (strcmp(policies[i].name, name) == 0)
            return &policies[i];
    return NULL;
}

const struct carma_policy *carma_policy_all(size_t *n)
{
    *n = sizeof policies / sizeof policies[0];
    return policies;
}

void carma_policy_names(char *buf, size_t cap)
{
    assert(buf && cap > 0);
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof policies / sizeof policies[0] && len + 1 < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", policies[i].name);
        if (w < 0)
            break;
        len += (size_t)w < cap - len ? (size_t)w : cap - len - 1;
    }
}
