/* carmad's estimate queue (src/daemon/estq.c): items come back in the order pushed, each
 * with carmad_model_bound's answer (a bad summary's error included), the fd wakes the
 * caller, and a queue stopped with items held hands them back untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/estq.h"
#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "sim/gpukind.h"
#include "util/csv.h"

#define RESNET "data/estimator/cifar-summaries/resnet18cifar100_32.model"

static struct carma_req_job job(const char *summary, uint32_t batch)
{
    struct carma_req_job rj;
    memset(&rj, 0, sizeof rj);
    rj.summary = summary;
    rj.batch = batch;
    rj.gpus = 1;
    rj.umask = -1;
    rj.train.optimizer = EST_OPT_ADAMW; /* as carma_req_parse sets it */
    rj.train.precision = EST_PREC_FP32;
    return rj;
}

/* The next finished item, as carmad's loop takes it: only once the fd has woken it (a
 * wakeup may find none: one item's write can come after the take that got it); NULL when
 * the fd stays quiet for 60 s. */
static struct carmad_estq_item *next_done(struct carmad_estq *q)
{
    for (;;) {
        struct carmad_estq_item *it = carmad_estq_take(q);
        if (it)
            return it;
        struct pollfd p = {.fd = carmad_estq_fd(q), .events = POLLIN};
        if (poll(&p, 1, 60000) != 1)
            return NULL;
        uint64_t n;
        assert_int_equal(read(p.fd, &n, sizeof n), (ssize_t)sizeof n);
        assert_true(n >= 1);
    }
}

static void test_order_and_answers(void **state)
{
    (void)state;
    char *text;
    size_t len;
    struct carma_err err;
    assert_int_equal(carma_file_read(RESNET, EST_MAX_INPUT, &text, &len, &err), 0);
    const struct sim_gpu_kind *dev[] = {sim_gpu_kind_find("a100-40gb"),
                                        sim_gpu_kind_find("h100-80gb")};
    struct carmad_estq *q;
    assert_int_equal(carmad_estq_start(&q, dev, 2, NULL, &err), 0);
    struct carma_req_job rj[4] = {job(text, 32), job("not a model summary\n", 32), job(NULL, 0),
                                  job(text, 64)};
    struct carmad_estq_item it[4];
    memset(it, 0, sizeof it);
    for (int k = 0; k < 4; k++) {
        it[k].rj = &rj[k];
        carmad_estq_push(q, &it[k]);
    }
    for (int k = 0; k < 4; k++)
        assert_ptr_equal(next_done(q), &it[k]);
    assert_null(carmad_estq_take(q));
    /* the thread's answers are carmad_model_bound's */
    for (int k = 0; k < 4; k++) {
        struct carmad_model m;
        struct carma_err e = {{0}};
        int rc = carmad_model_bound(&rj[k], dev, 2, &m, &e);
        assert_int_equal(it[k].rc, rc);
        assert_string_equal(it[k].err.msg, e.msg);
        assert_memory_equal(&it[k].model, &m, sizeof m);
    }
    assert_true(it[0].model.bound_mib > 0 && it[3].model.bound_mib > it[0].model.bound_mib);
    assert_int_equal(it[1].rc, -EINVAL);
    assert_true(it[1].err.msg[0] != 0);
    assert_true(it[2].rc == 0 && it[2].model.bound_mib == 0);
    carmad_estq_stop(q);
    free(text);
}

/* Stopped while the thread holds one item and another waits: both are the caller's again,
 * not finished, and the queue has let go of them (ASan: nothing touches them after). */
static void test_stop_with_items_held(void **state)
{
    (void)state;
    char hold[64], held[80];
    snprintf(hold, sizeof hold, "/tmp/carma-estq-XXXXXX");
    int fd = mkstemp(hold);
    assert_true(fd >= 0);
    close(fd);
    unlink(hold); /* a name that does not exist: every estimate holds */
    snprintf(held, sizeof held, "%s.held", hold);
    struct carma_err err;
    struct carmad_estq *q;
    assert_int_equal(carmad_estq_start(&q, NULL, 0, hold, &err), 0);
    /* finished, either would say so: -EINVAL and a message */
    struct carma_req_job rj = job("not a model summary\n", 32);
    struct carmad_estq_item *it = calloc(2, sizeof *it);
    assert_non_null(it);
    it[0].rj = it[1].rj = &rj;
    it[0].rc = it[1].rc = 12345; /* push clears it to 0 */
    carmad_estq_push(q, &it[0]);
    carmad_estq_push(q, &it[1]);
    int k = 0;
    while (access(held, F_OK) != 0 && k++ < 6000) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(access(held, F_OK), 0);
    assert_null(carmad_estq_take(q)); /* held: nothing finished */
    carmad_estq_stop(q);
    for (int j = 0; j < 2; j++) {
        assert_int_equal(it[j].rc, 0);
        assert_int_equal(it[j].err.msg[0], 0);
    }
    free(it);
    unlink(held);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_answers),
        cmocka_unit_test(test_stop_with_items_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
