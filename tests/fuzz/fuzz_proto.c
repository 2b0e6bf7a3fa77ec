/* Fuzz target: the carmad request parser (every byte a client sends goes through
 * it). Checks the parsed request keeps the protocol's bounds, and that a response
 * can always be built and serialised. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The same bytes as `carma submit --after`'s list: bounded, real ids, none twice, and a
 * refusal says why. */
static void fuzz_ids(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return;
    memcpy(s, data, size);
    s[size] = 0;
    uint64_t ids[CARMA_PROTO_MAX_AFTER];
    size_t n = 0;
    struct carma_err err = {{0}};
    int rc = carma_proto_ids_parse(s, ids, CARMA_PROTO_MAX_AFTER, &n, &err);
    if (rc && !err.msg[0])
        __builtin_trap();
    if (!rc) {
        if (n == 0 || n > CARMA_PROTO_MAX_AFTER)
            __builtin_trap();
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 1 || ids[i] > INT64_MAX)
                __builtin_trap();
            for (size_t k = 0; k < i; k++)
                if (ids[k] == ids[i])
                    __builtin_trap();
        }
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_ids(data, size);
    struct carma_req q;
    struct carma_err err;
    if (carma_req_parse(&q, (const char *)data, size, &err) != 0) {
        if (!err.msg[0])
            __builtin_trap(); /* every refusal says why */
        json_t *bad = carma_resp_error("badrequest", "%s", err.msg);
        if (!bad)
            __builtin_trap(); /* and carmad can always send it (JSON holds only UTF-8) */
        json_decref(bad);
        return 0;
    }
    if ((unsigned)q.op > CARMA_OP_LAST || !carma_op_name(q.op))
        __builtin_trap();
    if (q.op == CARMA_OP_USAGE || q.op == CARMA_OP_HISTORY) {
        if (q.since > CARMA_PROTO_MAX_TIME || q.until > CARMA_PROTO_MAX_TIME ||
            (q.since >= 0 && q.until >= 0 && q.until <= q.since) ||
            q.points > CARMA_PROTO_MAX_POINTS || (q.user && !q.user[0]))
            __builtin_trap();
    }
    if (q.op == CARMA_OP_SUBMIT) {
        const struct carma_req_job *j = &q.job;
        if (j->argc == 0 || j->argc > CARMA_PROTO_MAX_ARGV || j->argv[j->argc] ||
            j->argv[0][0] == 0 || j->cwd[0] != '/' || j->gpus < 1 ||
            j->gpus > CARMA_PROTO_MAX_GPUS || j->nenv > CARMA_PROTO_MAX_ENV || j->umask < -1 ||
            j->umask > 0777 ||
            (j->time_limit_s && (j->time_limit_s < CARMA_PROTO_MIN_TIME_LIMIT_S ||
                                 j->time_limit_s > CARMA_PROTO_MAX_TIME_LIMIT_S)))
            __builtin_trap();
        for (size_t i = 0; i < j->argc; i++)
            if (strlen(j->argv[i]) > CARMA_PROTO_MAX_ARG)
                __builtin_trap();
        /* "after": bounded, real ids, none twice */
        if (j->nafter > CARMA_PROTO_MAX_AFTER)
            __builtin_trap();
        for (size_t i = 0; i < j->nafter; i++) {
            if (j->after[i] < 1 || j->after[i] > INT64_MAX)
                __builtin_trap();
            for (size_t k = 0; k < i; k++)
                if (j->after[k] == j->after[i])
                    __builtin_trap();
        }
        json_t *argv = json_object_get(json_object_get(q.root, "job"), "argv");
        if (json_dumpb(argv, NULL, 0, JSON_COMPACT) > CARMA_PROTO_MAX_ARGV_BYTES)
            __builtin_trap(); /* a job whose show could not fit */
    }
    if (q.op == CARMA_OP_LS && (q.limit > CARMA_PROTO_LS_PAGE || q.after > INT64_MAX))
        __builtin_trap();
    if (q.op == CARMA_OP_CANCEL) {
        /* ids, or all with its filters: never both, a filter never without all */
        if (q.all ? q.nids != 0 || q.ids : q.nids == 0 || q.nids > CARMA_PROTO_MAX_IDS)
            __builtin_trap();
        if (!q.all && (q.cancel_state || q.name || q.user || q.all_users))
            __builtin_trap();
        if ((unsigned)q.cancel_state > CARMA_CANCEL_RUNNING || (q.all_users && q.user) ||
            (q.name && (!q.name[0] || strlen(q.name) > CARMA_PROTO_MAX_NAME)) ||
            (q.user && (!q.user[0] || strlen(q.user) > CARMA_PROTO_MAX_USER)))
            __builtin_trap();
    } else if (q.cancel_state || q.name || q.all_users || (q.user && q.op != CARMA_OP_USAGE) ||
               (q.all && q.op != CARMA_OP_LS && q.op != CARMA_OP_DRAIN &&
                q.op != CARMA_OP_UNDRAIN)) {
        __builtin_trap(); /* fields of no other op */
    }
    if (q.op == CARMA_OP_DRAIN || q.op == CARMA_OP_UNDRAIN) {
        /* what STATE/drained keeps as it is: printable ASCII, bounded */
        if (q.gpu_uuid ? q.gpu != 0 || !carma_proto_printable_ok(q.gpu_uuid, CARMA_PROTO_MAX_UUID)
                       : q.gpu > CARMA_PROTO_MAX_GPU_INDEX)
            __builtin_trap();
        /* one GPU, a list or all: never two of them; a list bounded, each entry as "gpu" */
        if ((q.all && (q.gpu_list || q.gpu_uuid || q.gpu)) ||
            (q.gpu_list && (q.gpu_uuid || q.gpu)) || (!q.gpu_list != !q.ngpu_list) ||
            q.ngpu_list > CARMA_PROTO_MAX_GPU_LIST)
            __builtin_trap();
        for (size_t k = 0; k < q.ngpu_list; k++)
            if (q.gpu_list[k].uuid
                    ? q.gpu_list[k].index != 0 ||
                          !carma_proto_printable_ok(q.gpu_list[k].uuid, CARMA_PROTO_MAX_UUID)
                    : q.gpu_list[k].index > CARMA_PROTO_MAX_GPU_INDEX)
                __builtin_trap();
        if (q.reason && (q.op == CARMA_OP_UNDRAIN ||
                         !carma_proto_printable_ok(q.reason, CARMA_PROTO_MAX_REASON)))
            __builtin_trap();
    } else if (q.gpu_uuid || q.reason || q.gpu || q.gpu_list || q.ngpu_list) {
        __builtin_trap();
    }
    json_t *r = carma_resp_error("badrequest", "%s", "x");
    char *line;
    size_t len;
    if (carma_proto_dump(r, &line, &len) == 0)
        free(line);
    json_decref(r);
    carma_req_free(&q);
    return 0;
}
