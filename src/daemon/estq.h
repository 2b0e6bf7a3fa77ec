/* carmad's estimate queue: the model bounds of submitted summaries (carmad_model_bound),
 * worked out on a thread of their own, so that carmad's loop never waits for one: the
 * largest summaries a client may send take a tenth of a second or more for each GPU kind
 * (docs/estimator.md, Speed), while the loop answers other clients, launches jobs and
 * samples the GPUs.
 *
 * Items are estimated one at a time in the order pushed and handed back in that order.
 * The queue's fd (an eventfd) is readable while finished items wait: read it to clear it,
 * then take every finished item (a wakeup may find none). The caller owns the items; the
 * queue only links them, and touches none once carmad_estq_stop returns. */
#ifndef CARMA_DAEMON_ESTQ_H
#define CARMA_DAEMON_ESTQ_H

#include <stddef.h>

#include "daemon/history.h"
#include "proto/proto.h"
#include "util/err.h"

struct carmad_estq_item {
    const struct carma_req_job *rj; /* in: the thread reads it: unchanged until taken */
    struct carmad_model model;      /* out */
    int rc;                         /* out: 0, or a negative errno with err */
    struct carma_err err;
    double seconds;                /* out: the thread's time on it (CLOCK_MONOTONIC) */
    struct carmad_estq_item *next; /* the queue's */
};

struct carmad_estq;
struct sim_gpu_kind;

/* Starts the thread, which estimates for the GPU kinds dev[0..n) (carmad_model_bound's;
 * they must outlive the queue). hold_path (tests: CARMA_TEST_ESTIMATE_HOLD): when not
 * NULL, each estimate creates hold_path ".held" and waits until hold_path exists. Returns 0 or a
 * negative errno with err. */
int carmad_estq_start(struct carmad_estq **out, const struct sim_gpu_kind *const *dev, size_t n,
                      const char *hold_path, struct carma_err *err);
int carmad_estq_fd(const struct carmad_estq *q);
void carmad_estq_push(struct carmad_estq *q, struct carmad_estq_item *it);
/* The oldest finished item, NULL when none is. */
struct carmad_estq_item *carmad_estq_take(struct carmad_estq *q);
/* Lets the item in hand finish, stops the thread and frees the queue (NULL: nothing).
 * Items pushed and not taken are the caller's again, finished or not. */
void carmad_estq_stop(struct carmad_estq *q);

#endif
