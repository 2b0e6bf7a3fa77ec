#include "proto/proto.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/group.h"
#include "util/utf8.h"
#include "util/clock.h"

static const char *const op_names[] = {
    [CARMA_OP_PING] = "ping",   [CARMA_OP_SUBMIT] = "submit",   [CARMA_OP_LS] = "ls",
    [CARMA_OP_SHOW] = "show",   [CARMA_OP_CANCEL] = "cancel",   [CARMA_OP_LOGS] = "logs",
    [CARMA_OP_GPUS] = "gpus",   [CARMA_OP_USAGE] = "usage",     [CARMA_OP_HISTORY] = "history",
    [CARMA_OP_DRAIN] = "drain", [CARMA_OP_UNDRAIN] = "undrain",
};
#define NOPS (sizeof op_names / sizeof op_names[0])

const char *carma_op_name(enum carma_op op)
{
    return (unsigned)op < NOPS ? op_names[op] : NULL;
}

/* ---- strict field access ---- */

/* Fails when `obj` has a key outside the NULL-terminated list `allowed`. */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed,
                      struct carma_err *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        (void)v;
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                ok = 1;
        if (!ok)
            return carma_err_set(err, -EINVAL, "%s: unknown field '%s'", where,
                                 carma_quote(key, 64).s);
    }
    return 0;
}

/* Reads an unsigned integer field in [lo, hi]; absent leaves *out as is unless
 * required. */
static int get_uint(const json_t *obj, const char *key, const char *where, uint64_t lo,
                    uint64_t hi, int required, uint64_t *out, struct carma_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return carma_err_set(err, -EINVAL, "%s: missing field '%s'", where, key);
        return 0;
    }
    if (!json_is_integer(v))
        return carma_err_set(err, -EINVAL, "%s.%s: not an integer", where, key);
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi)
        return carma_err_set(err, -EINVAL, "%s.%s: %lld out of range [%llu, %llu]", where, key,
                             (long long)x, (unsigned long long)lo, (unsigned long long)hi);
    *out = (uint64_t)x;
    return 0;
}

/* A string without NUL bytes of at most max bytes. */
static int get_str(const json_t *obj, const char *key, const char *where, size_t max,
                   int required, const char **out, struct carma_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return carma_err_set(err, -EINVAL, "%s: missing field '%s'", where, key);
        return 0;
    }
    if (!json_is_string(v))
        return carma_err_set(err, -EINVAL, "%s.%s: not a string", where, key);
    size_t n = json_string_length(v);
    if (n > max)
        return carma_err_set(err, -E2BIG, "%s.%s: longer than %zu bytes", where, key, max);
    const char *s = json_string_value(v);
    if (strlen(s) != n)
        return carma_err_set(err, -EINVAL, "%s.%s: contains a NUL byte", where, key);
    *out = s;
    return 0;
}

/* A time field: a number in [0, CARMA_PROTO_MAX_TIME]; absent leaves *out. */
static int get_time(const json_t *obj, const char *key, double *out, struct carma_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return carma_err_set(err, -EINVAL, "request.%s: not a number of seconds", key);
    double x = json_number_value(v);
    if (!(x >= 0 && x <= CARMA_PROTO_MAX_TIME))
        return carma_err_set(err, -EINVAL, "request.%s: out of range", key);
    *out = x;
    return 0;
}

int carma_proto_printable_ok(const char *s, size_t max)
{
    size_t n = 0;
    int blank = 1;
    for (; s[n]; n++) {
        if (n == max || (unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e)
            return 0;
        blank &= s[n] == ' ';
    }
    return n > 0 && !blank;
}

/* A drain request's GPUs: "gpu", an index or a UUID; or "gpus", a list of them; or "all". */
static int get_gpu(const json_t *root, struct carma_req *req, struct carma_err *err)
{
    const json_t *v = json_object_get(root, "gpu"), *l = json_object_get(root, "gpus"),
                 *a = json_object_get(root, "all");
    if (a && !json_is_true(a))
        return carma_err_set(err, -EINVAL, "request.all: true or absent");
    if (!!v + !!l + !!a > 1)
        return carma_err_set(err, -EINVAL, "request: one of 'gpu', 'gpus' and 'all', not %s",
                             v && l ? "'gpu' and 'gpus'"
                             : v    ? "'gpu' and 'all'"
                                    : "'gpus' and 'all'");
    if (a) {
        req->all = 1;
        return 0;
    }
    if (l) {
        size_t n = json_is_array(l) ? json_array_size(l) : 0;
        if (n < 1 || n > CARMA_PROTO_MAX_GPU_LIST)
            return carma_err_set(err, -EINVAL, "request.gpus: an array of 1 to %d GPUs expected",
                                 CARMA_PROTO_MAX_GPU_LIST);
        req->gpu_list = calloc(n, sizeof *req->gpu_list);
        if (!req->gpu_list)
            return carma_err_set(err, -ENOMEM, "out of memory");
        for (size_t k = 0; k < n; k++) {
            const json_t *e = json_array_get(l, k);
            struct carma_req_gpu *g = &req->gpu_list[k];
            if (json_is_integer(e) && json_integer_value(e) >= 0 &&
                json_integer_value(e) <= CARMA_PROTO_MAX_GPU_INDEX) {
                g->index = (uint32_t)json_integer_value(e);
            } else if (json_is_integer(e)) {
                return carma_err_set(err, -EINVAL, "request.gpus[%zu]: %lld out of range [0, %d]",
                                     k, (long long)json_integer_value(e),
                                     CARMA_PROTO_MAX_GPU_INDEX);
            } else if (json_is_string(e) && json_string_length(e) == strlen(json_string_value(e)) &&
                       carma_proto_printable_ok(json_string_value(e), CARMA_PROTO_MAX_UUID)) {
                g->uuid = json_string_value(e);
            } else {
                return carma_err_set(err, -EINVAL,
                                     "request.gpus[%zu]: neither a GPU index nor a UUID (1 to "
                                     "%d bytes of printable ASCII)",
                                     k, CARMA_PROTO_MAX_UUID);
            }
        }
        req->ngpu_list = n;
        return 0;
    }
    if (!v)
        return carma_err_set(err, -EINVAL, "request: missing field 'gpu' (or 'gpus', or 'all')");
    if (json_is_integer(v)) {
        uint64_t g = 0;
        int rc = get_uint(root, "gpu", "request", 0, CARMA_PROTO_MAX_GPU_INDEX, 1, &g, err);
        req->gpu = (uint32_t)g;
        return rc;
    }
    if (!json_is_string(v))
        return carma_err_set(err, -EINVAL, "request.gpu: neither a GPU index nor a UUID");
    int rc = get_str(root, "gpu", "request", CARMA_PROTO_MAX_UUID, 1, &req->gpu_uuid, err);
    if (!rc && !carma_proto_printable_ok(req->gpu_uuid, CARMA_PROTO_MAX_UUID))
        rc = carma_err_set(err, -EINVAL, "request.gpu: a UUID is printable ASCII, not empty");
    if (rc)
        req->gpu_uuid = NULL;
    return rc;
}

/* A cancel's "all" and its filters ("state", "name", "user", "all_users"), which need it. */
static int get_cancel_all(const json_t *root, struct carma_req *req, struct carma_err *err)
{
    static const char *const filters[] = {"state", "name", "user", "all_users"};
    const json_t *a = json_object_get(root, "all");
    if (a && !json_is_boolean(a))
        return carma_err_set(err, -EINVAL, "request.all: not a boolean");
    req->all = json_is_true(a);
    if (!req->all) {
        for (size_t k = 0; k < sizeof filters / sizeof *filters; k++)
            if (json_object_get(root, filters[k]))
                return carma_err_set(err, -EINVAL,
                                     "request.%s: only with request.all (it filters the jobs "
                                     "cancelled all at once)",
                                     filters[k]);
        return 0;
    }
    const char *st = NULL;
    int rc = get_str(root, "state", "request", 16, 0, &st, err);
    if (rc)
        return rc;
    if (st && !strcmp(st, "queued"))
        req->cancel_state = CARMA_CANCEL_QUEUED;
    else if (st && !strcmp(st, "running"))
        req->cancel_state = CARMA_CANCEL_RUNNING;
    else if (st)
        return carma_err_set(err, -EINVAL,
                             "request.state: '%s': \"queued\" or \"running\" "
                             "expected",
                             carma_quote(st, 16).s);
    if ((rc = get_str(root, "name", "request", CARMA_PROTO_MAX_NAME, 0, &req->name, err)) ||
        (rc = get_str(root, "user", "request", CARMA_PROTO_MAX_USER, 0, &req->user, err))) {
        req->name = req->user = NULL;
        return rc;
    }
    if ((req->name && !req->name[0]) || (req->user && !req->user[0])) {
        rc = carma_err_set(err, -EINVAL, "request.%s: empty",
                           req->name && !req->name[0] ? "name" : "user");
        req->name = req->user = NULL;
        return rc;
    }
    const json_t *au = json_object_get(root, "all_users");
    if (au && !json_is_boolean(au))
        return carma_err_set(err, -EINVAL, "request.all_users: not a boolean");
    req->all_users = json_is_true(au);
    if (req->all_users && req->user)
        return carma_err_set(err, -EINVAL,
                             "request.all_users: not with request.user (every "
                             "user's jobs, or one user's)");
    return 0;
}

int carma_proto_env_name_ok(const char *k)
{
    if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || *k == '_'))
        return 0;
    for (const char *p = k + 1; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return 0;
    return k[0] != 0 && strlen(k) <= 256;
}

/* Controls, and the format characters that hide text or turn its direction: the soft
 * hyphen, the Arabic letter mark, zero widths and marks, line and paragraph separators,
 * embeddings, overrides, isolates, invisible operators, the BOM, interlinear annotation,
 * the invisible tag characters. */
static int name_char_refused(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xad || cp == 0x61c ||
           (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
           (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) ||
           (cp >= 0xe0000 && cp <= 0xe007f);
}

int carma_proto_char_hidden(const unsigned char *p, size_t l)
{
    return name_char_refused(carma_utf8_code_point(p, l));
}

void carma_proto_name_from(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    size_t max = cap - 1 < CARMA_PROTO_MAX_NAME ? cap - 1 : CARMA_PROTO_MAX_NAME;
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        size_t l = carma_utf8_seq(c);
        int bad = !l || name_char_refused(carma_utf8_code_point(c, l));
        size_t n = l ? l : 1; /* bytes read; one '?' stands for them when bad */
        if (o + (bad ? 1 : n) > max)
            break;
        if (bad) {
            out[o++] = '?';
        } else {
            memcpy(out + o, c, l);
            o += l;
        }
        c += n;
    }
    if (!o)
        o = (size_t)snprintf(out, cap, "job");
    out[o] = 0;
}

/* job.after: 1..CARMA_PROTO_MAX_AFTER distinct job ids (absent: none). */
static int parse_after(struct carma_req_job *j, const json_t *a, struct carma_err *err)
{
    j->nafter = 0;
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) == 0)
        return carma_err_set(err, -EINVAL, "job.after: not a non-empty array of job ids");
    if (json_array_size(a) > CARMA_PROTO_MAX_AFTER)
        return carma_err_set(err, -E2BIG, "job.after: more than %d job ids", CARMA_PROTO_MAX_AFTER);
    for (size_t k = 0; k < json_array_size(a); k++) {
        const json_t *x = json_array_get(a, k);
        if (!json_is_integer(x) || json_integer_value(x) < 1)
            return carma_err_set(err, -EINVAL, "job.after[%zu]: not a job id", k);
        uint64_t id = (uint64_t)json_integer_value(x);
        for (size_t m = 0; m < j->nafter; m++)
            if (j->after[m] == id)
                return carma_err_set(err, -EINVAL, "job.after[%zu]: job %llu listed twice", k,
                                     (unsigned long long)id);
        j->after[j->nafter++] = id;
    }
    return 0;
}

int carma_proto_ids_parse(const char *s, uint64_t *ids, size_t cap, size_t *n,
                          struct carma_err *err)
{
    if (cap > CARMA_PROTO_MAX_AFTER)
        cap = CARMA_PROTO_MAX_AFTER;
    const char *p = s;
    for (size_t item = 1;; item++) {
        const char *start = p;
        uint64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            unsigned dgt = (unsigned)(*p - '0');
            if (v > ((uint64_t)INT64_MAX - dgt) / 10)
                return carma_err_set(err, -EINVAL, "'%s': item %zu: a job id above %lld",
                                     carma_quote(s, 64).s, item, (long long)INT64_MAX);
            v = v * 10 + dgt;
            p++;
        }
        if (p == start || (*p && *p != ','))
            return carma_err_set(err, -EINVAL,
                                 "'%s': item %zu: not a job id (job ids separated by commas "
                                 "expected, such as 12,13)",
                                 carma_quote(s, 64).s, item);
        if (v == 0)
            return carma_err_set(err, -EINVAL, "'%s': item %zu: job ids start at 1",
                                 carma_quote(s, 64).s, item);
        for (size_t m = 0; m < *n; m++)
            if (ids[m] == v)
                return carma_err_set(err, -EINVAL, "'%s': job %llu listed twice",
                                     carma_quote(s, 64).s, (unsigned long long)v);
        if (*n >= cap)
            return carma_err_set(err, -E2BIG, "'%s': more than %zu job ids", carma_quote(s, 64).s,
                                 cap);
        ids[(*n)++] = v;
        if (!*p)
            return 0;
        p++; /* the comma: an item must follow */
    }
}

static int parse_job(struct carma_req *r, const json_t *job, struct carma_err *err)
{
    static const char *const keys[] = {"argv",
                                       "cwd",
                                       "env",
                                       "name",
                                       "gpus",
                                       "mem_mib",
                                       "max_attempts",
                                       "time_limit_s",
                                       "summary",
                                       "batch",
                                       "seq_len",
                                       "image_size",
                                       "heads",
                                       "experts_per_token",
                                       "shared_layer_runs",
                                       "tied_head",
                                       "optimizer",
                                       "precision",
                                       "attention",
                                       "gradient_checkpointing",
                                       "gradient_accumulation",
                                       "umask",
                                       "after",
                                       NULL};
    /* how the summary's model trains: the strings est_opts_set reads, then flags */
    static const char *const train_keys[] = {"optimizer", "precision", "attention",
                                             "gradient_checkpointing",
                                             "gradient_accumulation"};
    struct carma_req_job *j = &r->job;
    if (!json_is_object(job))
        return carma_err_set(err, -EINVAL, "job: not an object");
    int rc = check_keys(job, "job", keys, err);
    if (rc)
        return rc;
    const json_t *argv = json_object_get(job, "argv");
    if (!argv)
        return carma_err_set(err, -EINVAL, "job: missing field 'argv' (the command to run)");
    if (!json_is_array(argv))
        return carma_err_set(err, -EINVAL, "job.argv: not an array");
    size_t n = json_array_size(argv);
    if (n == 0)
        return carma_err_set(err, -EINVAL, "job.argv: empty (a command is required)");
    if (n > CARMA_PROTO_MAX_ARGV)
        return carma_err_set(err, -E2BIG, "job.argv: more than %d arguments",
                             CARMA_PROTO_MAX_ARGV);
    j->argv = calloc(n + 1, sizeof *j->argv);
    if (!j->argv)
        return carma_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(argv, i);
        if (!json_is_string(a))
            return carma_err_set(err, -EINVAL, "job.argv[%zu]: not a string", i);
        size_t len = json_string_length(a);
        if (len > CARMA_PROTO_MAX_ARG)
            return carma_err_set(err, -E2BIG, "job.argv[%zu]: longer than %d bytes", i,
                                 CARMA_PROTO_MAX_ARG);
        const char *s = json_string_value(a);
        if (strlen(s) != len)
            return carma_err_set(err, -EINVAL, "job.argv[%zu]: contains a NUL byte", i);
        if (i == 0 && len == 0)
            return carma_err_set(err, -EINVAL, "job.argv[0]: empty command");
        j->argv[i] = s;
    }
    j->argc = n;
    /* carmad stores and shows argv as compact JSON: bound that, not just the parts. */
    size_t argv_json = json_dumpb(argv, NULL, 0, JSON_COMPACT);
    if (argv_json > CARMA_PROTO_MAX_ARGV_BYTES)
        return carma_err_set(err, -E2BIG, "job.argv: %zu bytes as JSON, more than %u in all",
                             argv_json, CARMA_PROTO_MAX_ARGV_BYTES);
    if ((rc = get_str(job, "cwd", "job", CARMA_PROTO_MAX_PATH, 1, &j->cwd, err)))
        return rc;
    if (j->cwd[0] != '/')
        return carma_err_set(err, -EINVAL, "job.cwd: not an absolute path");
    if ((rc = get_str(job, "name", "job", CARMA_PROTO_MAX_NAME, 0, &j->name, err)))
        return rc;
    /* A name is printed in other users' tables: no control characters to forge rows
     * with (C0, DEL, C1: U+009B is an 8-bit CSI), no invisible or direction-changing
     * format characters to disguise it, and not empty. */
    if (j->name) {
        if (!j->name[0])
            return carma_err_set(err, -EINVAL, "job.name: empty");
        for (const unsigned char *c = (const unsigned char *)j->name; *c;) {
            size_t l = carma_utf8_seq(c);
            uint32_t cp = carma_utf8_code_point(c, l);
            if (!l || name_char_refused(cp))
                return carma_err_set(err, -EINVAL, "job.name: %s U+%04X at byte %zu",
                                     cp < 0xa0 ? "control character"
                                               : "invisible format character",
                                     (unsigned)cp, (size_t)(c - (const unsigned char *)j->name));
            c += l;
        }
    }
    if ((rc = get_str(job, "summary", "job", CARMA_PROTO_MAX_SUMMARY, 0, &j->summary, err)))
        return rc;
    uint64_t x = 1;
    if ((rc = get_uint(job, "gpus", "job", 1, CARMA_PROTO_MAX_GPUS, 0, &x, err)))
        return rc;
    j->gpus = (uint32_t)x;
    x = 0;
    if ((rc = get_uint(job, "mem_mib", "job", 0, UINT64_C(1) << 30, 0, &x, err)))
        return rc;
    j->mem_mib = x;
    x = 0;
    if ((rc = get_uint(job, "max_attempts", "job", 0, CARMA_PROTO_MAX_ATTEMPTS, 0, &x, err)))
        return rc;
    j->max_attempts = (uint32_t)x;
    x = 0; /* absent: no limit */
    if ((rc = get_uint(job, "time_limit_s", "job", CARMA_PROTO_MIN_TIME_LIMIT_S,
                       CARMA_PROTO_MAX_TIME_LIMIT_S, 0, &x, err)))
        return rc;
    j->time_limit_s = (uint32_t)x;
    /* an integer (a JSON number: 63 for 077), not a string of octal digits */
    x = UINT64_MAX;
    if ((rc = get_uint(job, "umask", "job", 0, 0777, 0, &x, err)))
        return rc;
    j->umask = x == UINT64_MAX ? -1 : (int)x;
    if ((rc = parse_after(j, json_object_get(job, "after"), err)))
        return rc;
    x = 0;
    if ((rc = get_uint(job, "batch", "job", 0, UINT32_MAX, 0, &x, err)))
        return rc;
    j->batch = (uint32_t)x;
    x = 0;
    if ((rc = get_uint(job, "seq_len", "job", 0, 1048576, 0, &x, err)))
        return rc;
    j->seq_len = (uint32_t)x;
    const json_t *img = json_object_get(job, "image_size");
    if (img) {
        const json_t *h = json_array_get(img, 0), *w = json_array_get(img, 1);
        if (!json_is_array(img) || json_array_size(img) != 2 || !json_is_integer(h) ||
            !json_is_integer(w) || json_integer_value(h) < 1 || json_integer_value(h) > 65536 ||
            json_integer_value(w) < 1 || json_integer_value(w) > 65536)
            return carma_err_set(err, -EINVAL,
                                 "job.image_size: not [height, width], each from 1 to 65536");
        j->image_h = (uint32_t)json_integer_value(h);
        j->image_w = (uint32_t)json_integer_value(w);
    }
    x = 0;
    if ((rc = get_uint(job, "heads", "job", 1, EST_MAX_HEADS, 0, &x, err)))
        return rc;
    j->heads = (uint32_t)x;
    if (j->heads && !j->summary)
        return carma_err_set(err, -EINVAL, "job.heads: given without job.summary (it sizes "
                             "the summary's attention)");
    x = 0;
    if ((rc = get_uint(job, "experts_per_token", "job", 1, EST_MAX_EXPERTS, 0, &x, err)))
        return rc;
    if (x && !j->summary)
        return carma_err_set(err, -EINVAL, "job.experts_per_token: given without job.summary "
                             "(it routes the summary's mixture-of-experts blocks)");
    j->train.experts_per_token = (uint32_t)x;
    x = 0;
    if ((rc = get_uint(job, "shared_layer_runs", "job", 1, EST_MAX_SHARED_RUNS, 0, &x, err)))
        return rc;
    if (x && !j->summary)
        return carma_err_set(err, -EINVAL,
                             "job.shared_layer_runs: given without job.summary "
                             "(it runs the summary's shared layer group)");
    j->shared_layer_runs = (uint32_t)x;
    const json_t *tie = json_object_get(job, "tied_head");
    if (tie && !json_is_boolean(tie))
        return carma_err_set(err, -EINVAL, "job.tied_head: not true or false");
    if (tie && !j->summary)
        return carma_err_set(err, -EINVAL,
                             "job.tied_head: given without job.summary (it "
                             "ties the summary's output head to its table)");
    j->tied_head = json_is_true(tie);
    if (j->summary && !j->batch)
        return carma_err_set(err, -EINVAL, "job.summary: given without job.batch (the "
                             "estimator needs the batch size)");
    j->train.optimizer = EST_OPT_ADAMW;
    j->train.precision = EST_PREC_FP32;
    for (size_t k = 0; k < sizeof train_keys / sizeof *train_keys; k++)
        if (json_object_get(job, train_keys[k]) && !j->summary)
            return carma_err_set(err, -EINVAL, "job.%s: given without job.summary (it says "
                                 "how the summary's model trains)", train_keys[k]);
    for (size_t k = 0; k < 3; k++) {
        const char *v = NULL, *accepted;
        if ((rc = get_str(job, train_keys[k], "job", 64, 0, &v, err)))
            return rc;
        if (v && est_opts_set(&j->train, train_keys[k], v, &accepted) < 0)
            return carma_err_set(err, -EINVAL, "job.%s: unknown %s '%s' (%s)", train_keys[k],
                                 train_keys[k], carma_quote(v, 64).s, accepted);
    }
    int *const flag[] = {&j->train.grad_checkpoint, &j->train.grad_accum}; /* keys 3, 4 */
    _Static_assert(3 + sizeof flag / sizeof *flag == sizeof train_keys / sizeof *train_keys,
                   "a flag for each train key after the three strings");
    for (size_t k = 3; k < sizeof train_keys / sizeof *train_keys; k++) {
        const json_t *f = json_object_get(job, train_keys[k]);
        if (f && !json_is_boolean(f))
            return carma_err_set(err, -EINVAL, "job.%s: not true or false", train_keys[k]);
        *flag[k - 3] = json_is_true(f);
    }
    const json_t *env = json_object_get(job, "env");
    if (env) {
        if (!json_is_object(env))
            return carma_err_set(err, -EINVAL, "job.env: not an object");
        size_t ne = json_object_size(env);
        if (ne > CARMA_PROTO_MAX_ENV)
            return carma_err_set(err, -E2BIG, "job.env: more than %d entries",
                                 CARMA_PROTO_MAX_ENV);
        j->env_key = calloc(ne + 1, sizeof *j->env_key);
        j->env_val = calloc(ne + 1, sizeof *j->env_val);
        if (!j->env_key || !j->env_val)
            return carma_err_set(err, -ENOMEM, "out of memory");
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)env, k, v) {
            if (!carma_proto_env_name_ok(k))
                return carma_err_set(err, -EINVAL, "job.env: invalid variable name '%s'",
                                     carma_quote(k, 64).s);
            if (!json_is_string(v))
                return carma_err_set(err, -EINVAL, "job.env.%s: not a string",
                                     carma_quote(k, 64).s);
            size_t len = json_string_length(v);
            if (len > CARMA_PROTO_MAX_ENV_BYTES || strlen(json_string_value(v)) != len)
                return carma_err_set(err, -EINVAL, "job.env.%s: too long or holds a NUL",
                                     carma_quote(k, 64).s);
            j->env_key[j->nenv] = k;
            j->env_val[j->nenv] = json_string_value(v);
            j->nenv++;
        }
    }
    return 0;
}

void carma_req_free(struct carma_req *req)
{
    if (!req)
        return;
    free(req->job.argv);
    free(req->job.env_key);
    free(req->job.env_val);
    free(req->ids);
    free(req->gpu_list);
    if (req->root)
        json_decref(req->root);
    memset(req, 0, sizeof *req);
}

int carma_req_parse(struct carma_req *req, const char *buf, size_t len, struct carma_err *err)
{
    memset(req, 0, sizeof *req);
    req->since = req->until = -1;
    if (len > CARMA_PROTO_MAX_LINE)
        return carma_err_set(err, -E2BIG, "request longer than %u bytes", CARMA_PROTO_MAX_LINE);
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return carma_err_set(err, -EINVAL, "malformed JSON at column %d: %s", je.column, je.text);
    req->root = root;
    int rc;
    if (!json_is_object(root)) {
        rc = carma_err_set(err, -EINVAL, "request: not a JSON object");
        goto fail;
    }
    uint64_t v = 0;
    if ((rc = get_uint(root, "v", "request", CARMA_PROTO_VERSION, CARMA_PROTO_VERSION, 1, &v,
                       err)))
        goto fail;
    const char *op = NULL;
    if ((rc = get_str(root, "op", "request", 32, 1, &op, err)))
        goto fail;
    size_t oi;
    for (oi = 0; oi < NOPS; oi++)
        if (strcmp(op_names[oi], op) == 0)
            break;
    if (oi == NOPS) {
        rc = carma_err_set(err, -EINVAL, "request.op: unknown operation '%s'",
                           carma_quote(op, 32).s);
        goto fail;
    }
    req->op = (enum carma_op)oi;
    switch (req->op) {
    case CARMA_OP_PING:
    case CARMA_OP_GPUS: {
        static const char *const k[] = {"v", "op", NULL};
        rc = check_keys(root, "request", k, err);
        break;
    }
    case CARMA_OP_LS: {
        static const char *const k[] = {"v", "op", "all", "after", "limit", NULL};
        if ((rc = check_keys(root, "request", k, err)))
            break;
        const json_t *a = json_object_get(root, "all");
        if (a && !json_is_boolean(a)) {
            rc = carma_err_set(err, -EINVAL, "request.all: not a boolean");
            break;
        }
        req->all = a && json_is_true(a);
        uint64_t lim = 0;
        if ((rc = get_uint(root, "after", "request", 0, INT64_MAX, 0, &req->after, err)) ||
            (rc = get_uint(root, "limit", "request", 1, CARMA_PROTO_LS_PAGE, 0, &lim, err)))
            break;
        req->limit = (uint32_t)lim;
        break;
    }
    case CARMA_OP_SHOW:
    case CARMA_OP_LOGS: {
        static const char *const k[] = {"v", "op", "id", NULL};
        if ((rc = check_keys(root, "request", k, err)))
            break;
        rc = get_uint(root, "id", "request", 1, INT64_MAX, 1, &req->id, err);
        break;
    }
    case CARMA_OP_CANCEL: {
        static const char *const k[] = {"v",    "op",   "ids",       "all", "state",
                                        "name", "user", "all_users", NULL};
        if ((rc = check_keys(root, "request", k, err)) || (rc = get_cancel_all(root, req, err)))
            break;
        const json_t *ids = json_object_get(root, "ids");
        if (req->all) {
            if (ids)
                rc = carma_err_set(err, -EINVAL,
                                   "request.ids: not with request.all (job ids or "
                                   "every job that matches, not both)");
            break;
        }
        if (!ids || !json_is_array(ids) || json_array_size(ids) == 0) {
            rc = carma_err_set(
                err, -EINVAL,
                "request.ids: a non-empty array of job ids needed (or \"all\": true)");
            break;
        }
        size_t n = json_array_size(ids);
        if (n > CARMA_PROTO_MAX_IDS) {
            rc = carma_err_set(err, -E2BIG, "request.ids: more than %d ids", CARMA_PROTO_MAX_IDS);
            break;
        }
        req->ids = calloc(n, sizeof *req->ids);
        if (!req->ids) {
            rc = carma_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(ids, i);
            if (!json_is_integer(x) || json_integer_value(x) < 1) {
                rc = carma_err_set(err, -EINVAL, "request.ids[%zu]: not a job id", i);
                break;
            }
            req->ids[i] = (uint64_t)json_integer_value(x);
        }
        req->nids = n;
        break;
    }
    case CARMA_OP_SUBMIT: {
        static const char *const k[] = {"v", "op", "job", NULL};
        if ((rc = check_keys(root, "request", k, err)))
            break;
        const json_t *job = json_object_get(root, "job");
        if (!job) {
            rc = carma_err_set(err, -EINVAL, "request: missing field 'job'");
            break;
        }
        rc = parse_job(req, job, err);
        break;
    }
    case CARMA_OP_USAGE:
    case CARMA_OP_HISTORY: {
        static const char *const ku[] = {"v", "op", "user", "since", "until", NULL};
        static const char *const kh[] = {"v", "op", "since", "until", "points", NULL};
        if ((rc = check_keys(root, "request", req->op == CARMA_OP_USAGE ? ku : kh, err)) ||
            (rc = get_time(root, "since", &req->since, err)) ||
            (rc = get_time(root, "until", &req->until, err)))
            break;
        if (req->since >= 0 && req->until >= 0 && req->until <= req->since) {
            rc = carma_err_set(err, -EINVAL, "request.until: not after request.since");
            break;
        }
        if (req->op == CARMA_OP_USAGE) {
            rc = get_str(root, "user", "request", CARMA_PROTO_MAX_USER, 0, &req->user, err);
            if (!rc && req->user && !req->user[0])
                rc = carma_err_set(err, -EINVAL, "request.user: empty");
        } else {
            uint64_t p = 0;
            rc = get_uint(root, "points", "request", 0, CARMA_PROTO_MAX_POINTS, 0, &p, err);
            req->points = (uint32_t)p;
        }
        break;
    }
    case CARMA_OP_DRAIN:
    case CARMA_OP_UNDRAIN: {
        static const char *const kd[] = {"v", "op", "gpu", "gpus", "all", "reason", NULL};
        static const char *const ku[] = {"v", "op", "gpu", "gpus", "all", NULL};
        if ((rc = check_keys(root, "request", req->op == CARMA_OP_DRAIN ? kd : ku, err)) ||
            (rc = get_gpu(root, req, err)) ||
            (rc = get_str(root, "reason", "request", CARMA_PROTO_MAX_REASON, 0, &req->reason, err)))
            break;
        if (req->reason && !carma_proto_printable_ok(req->reason, CARMA_PROTO_MAX_REASON))
            rc = carma_err_set(err, -EINVAL,
                               "request.reason: printable ASCII only (no control "
                               "characters), not empty or blank");
        break;
    }
    }
    if (rc == 0)
        return 0;
fail:
    carma_req_free(req);
    return rc;
}

/* ---- responses ---- */

json_t *carma_resp_ok(void)
{
    return json_pack("{s:b}", "ok", 1);
}

json_t *carma_resp_error(const char *code, const char *fmt, ...)
{
    char msg[CARMA_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        msg[0] = '\0';
    else if ((size_t)n >= sizeof msg) /* cut: at a whole character */
        carma_utf8_cut(msg, sizeof msg - 1);
    /* JSON holds only UTF-8: a message quoting bytes that are not (a file name) keeps
     * them as U+FFFD rather than losing the whole answer. */
    char *fixed = NULL;
    for (const unsigned char *p = (const unsigned char *)msg; *p;) {
        size_t l = carma_utf8_seq(p);
        if (!l) {
            fixed = carma_utf8_lossy(msg);
            break;
        }
        p += l;
    }
    json_t *r = json_pack("{s:b,s:s,s:s}", "ok", 0, "error", code, "message", fixed ? fixed : msg);
    free(fixed);
    return r;
}

int carma_proto_dump(const json_t *msg, char **out, size_t *len)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    if (!s)
        return -ENOMEM;
    size_t n = strlen(s);
    if (n >= CARMA_PROTO_MAX_LINE) {
        free(s);
        return -E2BIG;
    }
    char *b = realloc(s, n + 2);
    if (!b) {
        free(s);
        return -ENOMEM;
    }
    b[n] = '\n';
    b[n + 1] = 0;
    *out = b;
    *len = n + 1;
    return 0;
}

/* ---- client ---- */

static int socket_for(uid_t euid, char *buf, size_t cap)
{
    const char *e = getenv("CARMA_SOCKET");
    int n;
    if (e && *e)
        n = snprintf(buf, cap, "%s", e);
    else if (euid == 0)
        n = snprintf(buf, cap, "%s", CARMA_SYSTEM_SOCKET);
    else if ((e = getenv("XDG_RUNTIME_DIR")) && *e == '/')
        n = snprintf(buf, cap, "%s/carma/carmad.sock", e);
    else
        n = snprintf(buf, cap, "/tmp/carma-%u/carmad.sock", (unsigned)euid);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int carma_proto_default_socket(char *buf, size_t cap)
{
    return socket_for(geteuid(), buf, cap);
}

int carma_proto_client_socket(uid_t euid, const char *system_path, char *buf, size_t cap)
{
    int rc = socket_for(euid, buf, cap);
    const char *e = getenv("CARMA_SOCKET");
    if (rc || euid == 0 || (e && *e))
        return rc;
    struct stat st;
    if (lstat(buf, &st) == 0 || errno != ENOENT) /* the user's own carmad's, or unknown */
        return 0;
    if (lstat(system_path, &st) != 0 || !S_ISSOCK(st.st_mode))
        return 0; /* neither: the error names the user's own path, as before */
    int n = snprintf(buf, cap, "%s", system_path);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int carma_socket_trusted(const char *path, struct carma_err *err)
{
    char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    struct stat st;
    if (stat(dir, &st) != 0)
        return 0; /* connect() says why */
    uid_t me = geteuid();
    if (st.st_uid != 0 && st.st_uid != me)
        return carma_err_set(err, -EPERM,
                             "%s: not trusted: its folder %s belongs to uid %u, not to you or "
                             "root (another user could be listening there)",
                             path, dir, (unsigned)st.st_uid);
    if (!(st.st_mode & (S_IWGRP | S_IWOTH)))
        return 0;
    if (!(st.st_mode & S_ISVTX))
        return carma_err_set(err, -EPERM,
                             "%s: not trusted: its folder %s is writable by others", path, dir);
    /* a sticky folder (/tmp): what counts is who made the socket */
    if (lstat(path, &st) == 0 && st.st_uid != 0 && st.st_uid != me)
        return carma_err_set(err, -EPERM,
                             "%s: not trusted: it belongs to uid %u, not to you or root, in a "
                             "folder anyone can write",
                             path, (unsigned)st.st_uid);
    return 0;
}

int carma_client_connect(const char *path, struct carma_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return carma_err_set(err, -ENAMETOOLONG, "%s: socket path too long", path);
    int trc = carma_socket_trusted(path, err);
    if (trc < 0)
        return trc;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return carma_err_set(err, -errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        /* what to do when none listens there: the usual first error of a new user */
        const char *hint = e == ENOENT || e == ECONNREFUSED
                               ? " (is it running? start carmad, or name the socket it "
                                 "listens on with --socket or CARMA_SOCKET)"
                               : "";
        /* a shared server's socket admits a group (socket_group): say which, and what
         * to ask for, rather than a bare "Permission denied" */
        struct stat st;
        if (e == EACCES && stat(path, &st) == 0) {
            /* its name; else its number, and why no name when the lookup failed (a
             * directory server that does not answer) rather than found none */
            char gname[160];
            int ge = carma_group_name(st.st_gid, gname, sizeof gname);
            if (ge == -ENOENT)
                snprintf(gname, sizeof gname, "%u", (unsigned)st.st_gid);
            else if (ge < 0)
                snprintf(gname, sizeof gname, "%u (its name: cannot look it up: %s)",
                         (unsigned)st.st_gid, strerror(-ge));
            return carma_err_set(err, -e,
                                 "%s: cannot reach carmad: %s (its socket admits its owner and "
                                 "the members of group %s, mode %04o: ask the administrator to "
                                 "add you to that group, then log in again)",
                                 path, strerror(e), gname, (unsigned)(st.st_mode & 07777));
        }
        return carma_err_set(err, -e, "%s: cannot reach carmad%s: %s", path, hint, strerror(e));
    }
    return fd;
}

int carma_client_timeout_ms(void)
{
    const char *e = getenv("CARMA_TIMEOUT");
    if (e && *e) {
        char *end;
        double t = strtod(e, &end);
        if (!*end && t > 0 && t <= 86400)
            return (int)(t * 1000 + 0.5) > 0 ? (int)(t * 1000 + 0.5) : 1;
        static int said; /* asked for on every request: one word is enough */
        if (!said++)
            fprintf(stderr, "carma: CARMA_TIMEOUT '%.32s' is not a number of seconds in (0, "
                            "86400]: %d s\n",
                    e, CARMA_PROTO_TIMEOUT_S);
    }
    return CARMA_PROTO_TIMEOUT_S * 1000;
}

/* Waits for `events` on fd until the deadline (ms, CLOCK_MONOTONIC; < 0 none).
 * Returns 1 when ready, 0 on timeout, a negative errno on failure. */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        int ms = -1;
        if (deadline >= 0) {
            double left = deadline - carma_mono_s() * 1e3;
            if (left <= 0)
                return 0;
            ms = left > 1e9 ? 1000000000 : (int)left + 1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r > 0)
            return 1;
    }
}

int carma_client_call_timeout(int fd, const json_t *req, json_t **resp, int timeout_ms,
                              struct carma_err *err)
{
    double deadline = timeout_ms < 0 ? -1 : carma_mono_s() * 1e3 + timeout_ms;
    char *line;
    size_t len;
    int rc = carma_proto_dump(req, &line, &len);
    if (rc)
        return carma_err_set(err, rc, "request too large");
    size_t off = 0;
    int send_err = 0;
    while (off < len) {
        int w8 = wait_fd(fd, POLLOUT, deadline);
        if (w8 <= 0) {
            free(line);
            if (w8 == 0)
                return carma_err_set(err, -ETIMEDOUT, "carmad did not take the request within "
                                     "%g s (busy or stuck; CARMA_TIMEOUT sets the wait)",
                                     timeout_ms / 1e3);
            return carma_err_set(err, w8, "sending to carmad: %s", strerror(-w8));
        }
        ssize_t w = send(fd, line + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (w < 0) {
            /* carmad may have refused the connection with an answer: read it below. */
            send_err = errno;
            break;
        }
        off += (size_t)w;
    }
    free(line);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return carma_err_set(err, -ENOMEM, "out of memory");
    for (;;) {
        if (n == cap) {
            if (cap >= CARMA_PROTO_MAX_LINE * 2u) {
                free(buf);
                return carma_err_set(err, -E2BIG, "response from carmad too long");
            }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return carma_err_set(err, -ENOMEM, "out of memory");
            }
            buf = nb;
        }
        int w8 = wait_fd(fd, POLLIN, deadline);
        if (w8 == 0) {
            free(buf);
            return carma_err_set(err, -ETIMEDOUT, "carmad did not answer within %g s (busy "
                                 "or stuck; CARMA_TIMEOUT sets the wait)", timeout_ms / 1e3);
        }
        ssize_t r = w8 < 0 ? (errno = -w8, -1) : recv(fd, buf + n, cap - n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : ECONNRESET;
            free(buf);
            if (send_err)
                return carma_err_set(err, -send_err, "sending to carmad: %s",
                                     strerror(send_err));
            return carma_err_set(err, -e, "carmad closed the connection before answering");
        }
        char *nl = memchr(buf + n, '\n', (size_t)r);
        n += (size_t)r;
        if (nl) {
            json_error_t je;
            *resp = json_loadb(buf, (size_t)(nl - buf), JSON_REJECT_DUPLICATES, &je);
            free(buf);
            if (!*resp || !json_is_object(*resp)) {
                /* (JSON of another kind parsed: je.text says nothing) */
                const char *why = *resp ? "not a JSON object" : je.text;
                if (*resp)
                    json_decref(*resp);
                *resp = NULL;
                return carma_err_set(err, -EPROTO, "malformed response from carmad: %s", why);
            }
            return 0;
        }
    }
}

int carma_client_call(int fd, const json_t *req, json_t **resp, struct carma_err *err)
{
    return carma_client_call_timeout(fd, req, resp, carma_client_timeout_ms(), err);
}

int carma_client_request(const char *path, const json_t *req, json_t **resp,
                         struct carma_err *err)
{
    return carma_client_request_timeout(path, req, resp, carma_client_timeout_ms(), err);
}

int carma_client_request_timeout(const char *path, const json_t *req, json_t **resp, int timeout_ms,
                                 struct carma_err *err)
{
    int fd = carma_client_connect(path, err);
    if (fd < 0)
        return fd;
    int rc = carma_client_call_timeout(fd, req, resp, timeout_ms, err);
    close(fd);
    return rc;
}
