/* The carmad protocol: strict request parsing, responses, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/proto.h"
#include "util/err.h"
#include "util/utf8.h"

static int parse(const char *s, struct carma_req *q, struct carma_err *err)
{
    return carma_req_parse(q, s, strlen(s), err);
}

static void test_submit_ok(void **state)
{
    (void)state;
    struct carma_req q;
    struct carma_err err = {{0}};
    const char *s = "{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"python\",\"train.py\",\"--bs\","
                    "\"32\"],\"cwd\":\"/home/u\",\"env\":{\"PATH\":\"/bin\",\"A_1\":\"x\"},"
                    "\"name\":\"r\",\"gpus\":2,\"mem_mib\":4096,\"max_attempts\":5,\"batch\":32,"
                    "\"image_size\":[299,256]}}";
    assert_int_equal(parse(s, &q, &err), 0);
    assert_int_equal(q.op, CARMA_OP_SUBMIT);
    assert_int_equal(q.job.argc, 4);
    assert_string_equal(q.job.argv[1], "train.py");
    assert_null(q.job.argv[4]);
    assert_string_equal(q.job.cwd, "/home/u");
    assert_int_equal(q.job.nenv, 2);
    assert_int_equal(q.job.gpus, 2);
    assert_int_equal(q.job.mem_mib, 4096);
    assert_int_equal(q.job.max_attempts, 5);
    assert_int_equal(q.job.batch, 32);
    assert_int_equal(q.job.image_h, 299);
    assert_int_equal(q.job.image_w, 256);
    assert_string_equal(q.job.name, "r");
    carma_req_free(&q);
    /* Defaults. */
    assert_int_equal(parse("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"x\"],\"cwd\":\"/\"}}", &q,
                           &err), 0);
    assert_int_equal(q.job.gpus, 1);
    assert_int_equal(q.job.mem_mib, 0);
    assert_null(q.job.name);
    assert_int_equal(q.job.train.optimizer, EST_OPT_ADAMW);
    assert_int_equal(q.job.train.precision, EST_PREC_FP32);
    assert_int_equal(q.job.train.attention, EST_ATTN_SHOWN);
    assert_int_equal(q.job.train.grad_checkpoint, 0);
    assert_int_equal(q.job.train.grad_accum, 0);
    assert_int_equal(q.job.heads, 0);
    assert_int_equal(q.job.train.experts_per_token, 0);
    assert_int_equal(q.job.shared_layer_runs, 0);
    assert_int_equal(q.job.tied_head, 0);
    carma_req_free(&q);
    /* How the summary's model trains. */
    assert_int_equal(parse("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"x\"],\"cwd\":\"/\","
                           "\"summary\":\"s\",\"batch\":4,\"optimizer\":\"sgd\","
                           "\"precision\":\"bf16\",\"attention\":\"sdpa\","
                           "\"gradient_checkpointing\":true,\"heads\":8,"
                           "\"gradient_accumulation\":true,\"experts_per_token\":2,"
                           "\"shared_layer_runs\":12,\"tied_head\":true}}",
                           &q, &err),
                     0);
    assert_int_equal(q.job.tied_head, 1);
    assert_int_equal(q.job.heads, 8);
    assert_int_equal(q.job.shared_layer_runs, 12);
    assert_int_equal(q.job.train.experts_per_token, 2);
    assert_int_equal(q.job.train.optimizer, EST_OPT_SGD);
    assert_int_equal(q.job.train.precision, EST_PREC_BF16);
    assert_int_equal(q.job.train.attention, EST_ATTN_SDPA);
    assert_int_equal(q.job.train.grad_checkpoint, 1);
    assert_int_equal(q.job.train.grad_accum, 1);
    carma_req_free(&q);
    /* each flag on its own */
    assert_int_equal(parse("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"x\"],\"cwd\":\"/\","
                           "\"summary\":\"s\",\"batch\":4,\"gradient_accumulation\":true,"
                           "\"gradient_checkpointing\":false}}",
                           &q, &err), 0);
    assert_int_equal(q.job.train.grad_checkpoint, 0);
    assert_int_equal(q.job.train.grad_accum, 1);
    carma_req_free(&q);
}

/* A submission (head: its start, up to the job's last field) with the job field `key` set
 * to each JSON text of bad[0..n) is refused, the message naming job.KEY. */
static void job_field_refused(const char *head, const char *key, const char *const *bad, size_t n)
{
    char s[256], want[64];
    snprintf(want, sizeof want, "job.%s", key);
    for (size_t k = 0; k < n; k++) {
        struct carma_req q;
        struct carma_err err = {{0}};
        snprintf(s, sizeof s, "%s,\"%s\":%s}}", head, key, bad[k]);
        assert_int_equal(parse(s, &q, &err), -EINVAL);
        assert_non_null(strstr(err.msg, want));
    }
}

/* "umask": the submitter's, an integer 0..0777 (not a string of octal digits); absent,
 * -1 (carmad's default). */
static void test_submit_umask(void **state)
{
    (void)state;
    struct carma_req q;
    struct carma_err err = {{0}};
    const char *head = "{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\"";
    char s[256];
    snprintf(s, sizeof s, "%s}}", head);
    assert_int_equal(parse(s, &q, &err), 0);
    assert_int_equal(q.job.umask, -1);
    carma_req_free(&q);
    const int ok[] = {0, 18, 63, 511};
    for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) {
        snprintf(s, sizeof s, "%s,\"umask\":%d}}", head, ok[k]);
        assert_int_equal(parse(s, &q, &err), 0);
        assert_int_equal(q.job.umask, ok[k]);
        carma_req_free(&q);
    }
    const char *const bad[] = {"512", "-1", "\"077\"", "18.0", "true", "null", "4294967314"};
    job_field_refused(head, "umask", bad, sizeof bad / sizeof *bad);
}

/* "time_limit_s": an integer 1..31536000 (365 days); absent, 0 (no limit). */
static void test_submit_time_limit(void **state)
{
    (void)state;
    struct carma_req q;
    struct carma_err err = {{0}};
    const char *head = "{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\"";
    char s[256];
    snprintf(s, sizeof s, "%s}}", head);
    assert_int_equal(parse(s, &q, &err), 0);
    assert_int_equal(q.job.time_limit_s, 0);
    carma_req_free(&q);
    const unsigned ok[] = {1, 7200, 31536000};
    for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) {
        snprintf(s, sizeof s, "%s,\"time_limit_s\":%u}}", head, ok[k]);
        assert_int_equal(parse(s, &q, &err), 0);
        assert_int_equal(q.job.time_limit_s, ok[k]);
        carma_req_free(&q);
    }
    const char *const bad[] = {"0",   "-1",   "31536001", "\"2h\"",
                               "1.5", "true", "null",     "4294967297"};
    job_field_refused(head, "time_limit_s", bad, sizeof bad / sizeof *bad);
}

/* "after": 1..64 distinct job ids, kept in order; anything else refused naming the item. */
static void test_submit_after(void **state)
{
    (void)state;
    struct carma_req q;
    struct carma_err err = {{0}};
    const char *head = "{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\"";
    char s[1024];
    snprintf(s, sizeof s, "%s}}", head);
    assert_int_equal(parse(s, &q, &err), 0);
    assert_int_equal(q.job.nafter, 0);
    carma_req_free(&q);
    snprintf(s, sizeof s, "%s,\"after\":[12,3,9223372036854775807]}}", head);
    assert_int_equal(parse(s, &q, &err), 0);
    assert_int_equal(q.job.nafter, 3);
    assert_true(q.job.after[0] == 12 && q.job.after[1] == 3);
    assert_true(q.job.after[2] == UINT64_C(9223372036854775807));
    carma_req_free(&q);
    /* 64 ids pass, 65 do not */
    int o = snprintf(s, sizeof s, "%s,\"after\":[1", head);
    for (int k = 2; k <= 64; k++)
        o += snprintf(s + o, sizeof s - (size_t)o, ",%d", k);
    snprintf(s + o, sizeof s - (size_t)o, "]}}");
    assert_int_equal(parse(s, &q, &err), 0);
    assert_int_equal(q.job.nafter, 64);
    carma_req_free(&q);
    snprintf(s + o, sizeof s - (size_t)o, ",65]}}");
    assert_int_equal(parse(s, &q, &err), -E2BIG);
    assert_non_null(strstr(err.msg, "job.after"));
    const char *bad[] = {"[]", "[0]",  "[-1]", "[\"12\"]", "[1.5]",
                         "12", "null", "{}",   "[1,[2]]",  "[3,3]"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(s, sizeof s, "%s,\"after\":%s}}", head, bad[k]);
        int rc = parse(s, &q, &err);
        assert_true(rc < 0);
        assert_non_null(strstr(err.msg, "job.after"));
    }
    snprintf(s, sizeof s, "%s,\"after\":[3,4,3]}}", head);
    assert_int_equal(parse(s, &q, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "job 3 listed twice"));
}

/* carma submit --after's list: strict decimal ids and commas, appended, no repeats. */
static void test_ids_parse(void **state)
{
    (void)state;
    struct carma_err err = {{0}};
    uint64_t ids[CARMA_PROTO_MAX_AFTER];
    size_t n = 0;
    assert_int_equal(carma_proto_ids_parse("12", ids, CARMA_PROTO_MAX_AFTER, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(
        carma_proto_ids_parse("7,9223372036854775807", ids, CARMA_PROTO_MAX_AFTER, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_true(ids[0] == 12 && ids[1] == 7 && ids[2] == UINT64_C(9223372036854775807));
    const char *bad[] = {"",
                         ",",
                         "1,",
                         ",1",
                         "1,,2",
                         " 1",
                         "1 ",
                         "+1",
                         "-1",
                         "0",
                         "1;2",
                         "0x10",
                         "12a",
                         "9223372036854775808",
                         "99999999999999999999",
                         "1,2,1"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        n = 0;
        err.msg[0] = 0;
        assert_int_equal(carma_proto_ids_parse(bad[k], ids, CARMA_PROTO_MAX_AFTER, &n, &err),
                         -EINVAL);
        assert_true(err.msg[0] != 0);
    }
    n = 1;
    ids[0] = 5;
    assert_int_equal(carma_proto_ids_parse("4,5", ids, CARMA_PROTO_MAX_AFTER, &n, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "job 5 listed twice"));
    n = 0;
    assert_int_equal(carma_proto_ids_parse("1,2,3", ids, 2, &n, &err), -E2BIG);
    char many[512];
    int o = 0;
    for (int k = 1; k <= 65; k++)
        o += snprintf(many + o, sizeof many - (size_t)o, k > 1 ? ",%d" : "%d", k);
    n = 0;
    assert_int_equal(carma_proto_ids_parse(many, ids, CARMA_PROTO_MAX_AFTER, &n, &err), -E2BIG);
    assert_non_null(strstr(err.msg, "more than 64"));
}

static void test_other_ops(void **state)
{
    (void)state;
    struct carma_req q;
    struct carma_err err = {{0}};
    assert_int_equal(parse("{\"v\":1,\"op\":\"ls\",\"all\":true}", &q, &err), 0);
    assert_int_equal(q.op, CARMA_OP_LS);
    assert_true(q.all);
    assert_int_equal(q.after, 0);
    assert_int_equal(q.limit, 0);
    carma_req_free(&q);
    /* ls pages: jobs after an id, at most a limit */
    assert_int_equal(parse("{\"v\":1,\"op\":\"ls\",\"after\":1234,\"limit\":50}", &q, &err), 0);
    assert_int_equal(q.after, 1234);
    assert_int_equal(q.limit, 50);
    assert_false(q.all);
    carma_req_free(&q);
    assert_int_equal(parse("{\"op\":\"cancel\",\"v\":1,\"ids\":[3,4,5]}", &q, &err), 0);
    assert_int_equal(q.nids, 3);
    assert_int_equal(q.ids[2], 5);
    carma_req_free(&q);
    assert_int_equal(parse("{\"v\":1,\"op\":\"show\",\"id\":42}", &q, &err), 0);
    assert_int_equal(q.id, 42);
    carma_req_free(&q);
    assert_int_equal(parse("{\"v\":1,\"op\":\"gpus\"}", &q, &err), 0);
    carma_req_free(&q);
    assert_string_equal(carma_op_name(CARMA_OP_LOGS), "logs");
}

static void expect_bad(const char *s, const char *needle);

/* drain / undrain: a GPU by index or UUID, a reason STATE/drained keeps as it is */
static void test_drain_ops(void **state)
{
    (void)state;
    struct carma_req q;
    struct carma_err err = {{0}};
    assert_int_equal(
        parse("{\"v\":1,\"op\":\"drain\",\"gpu\":3,\"reason\":\"fan swap\"}", &q, &err), 0);
    assert_int_equal(q.op, CARMA_OP_DRAIN);
    assert_int_equal(q.gpu, 3);
    assert_null(q.gpu_uuid);
    assert_string_equal(q.reason, "fan swap");
    carma_req_free(&q);
    assert_int_equal(parse("{\"v\":1,\"op\":\"undrain\",\"gpu\":\"GPU-1\"}", &q, &err), 0);
    assert_int_equal(q.op, CARMA_OP_UNDRAIN);
    assert_string_equal(q.gpu_uuid, "GPU-1");
    assert_null(q.reason);
    carma_req_free(&q);
    assert_string_equal(carma_op_name(CARMA_OP_UNDRAIN), "undrain");
    expect_bad("{\"v\":1,\"op\":\"drain\"}", "missing field 'gpu'");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":65536}", "request.gpu: 65536 out of range");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":1.5}", "neither a GPU index nor a UUID");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":\"\"}", "request.gpu: a UUID is printable ASCII");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":\"GPU-\\u00e9\"}", "printable ASCII");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":1,\"reason\":\"a\\nb\"}",
               "request.reason: printable ASCII only");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":1,\"reason\":\"  \"}", "not empty or blank");
    expect_bad("{\"v\":1,\"op\":\"drain\",\"gpu\":1,\"reason\":7}", "request.reason: not a string");
    expect_bad("{\"v\":1,\"op\":\"undrain\",\"gpu\":1,\"reason\":\"x\"}", "unknown field 'reason'");
    char big[256];
    snprintf(big, sizeof big, "{\"v\":1,\"op\":\"drain\",\"gpu\":1,\"reason\":\"%0*d\"}",
             CARMA_PROTO_MAX_REASON + 1, 0);
    expect_bad(big, "request.reason: longer than 100 bytes");
    assert_true(carma_proto_printable_ok("a b~", 4));
    assert_false(carma_proto_printable_ok("a b~", 3));
    assert_false(carma_proto_printable_ok("", 4));
    assert_false(carma_proto_printable_ok("a\x7f", 4));
}

static void expect_bad(const char *s, const char *needle)
{
    struct carma_req q;
    struct carma_err err = {{0}};
    int rc = parse(s, &q, &err);
    if (rc == 0) {
        carma_req_free(&q);
        fail_msg("accepted: %s", s);
    }
    if (!strstr(err.msg, needle))
        fail_msg("'%s': message '%s' lacks '%s'", s, err.msg, needle);
}

static void test_strict(void **state)
{
    (void)state;
    expect_bad("", "malformed JSON");
    expect_bad("{", "malformed JSON");
    expect_bad("[]", "not a JSON object");
    expect_bad("{\"op\":\"ls\"}", "missing field 'v'");
    expect_bad("{\"v\":2,\"op\":\"ls\"}", "out of range");
    expect_bad("{\"v\":1,\"op\":\"rm\"}", "unknown operation");
    expect_bad("{\"v\":1,\"op\":\"ls\",\"x\":1}", "unknown field 'x'");
    expect_bad("{\"v\":1,\"op\":\"ls\",\"op\":\"ls\"}", "malformed JSON"); /* duplicate key */
    expect_bad("{\"v\":1,\"op\":\"ls\",\"all\":1}", "not a boolean");
    expect_bad("{\"v\":1,\"op\":\"show\"}", "missing field 'id'");
    expect_bad("{\"v\":1,\"op\":\"show\",\"id\":0}", "out of range");
    expect_bad("{\"v\":1,\"op\":\"show\",\"id\":1.5}", "not an integer");
    expect_bad("{\"v\":1,\"op\":\"cancel\",\"ids\":[]}", "non-empty");
    expect_bad("{\"v\":1,\"op\":\"cancel\",\"ids\":[\"1\"]}", "not a job id");
    expect_bad("{\"v\":1,\"op\":\"submit\"}", "missing field 'job'");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"cwd\":\"/\"}}", "missing field 'argv'");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[],\"cwd\":\"/\"}}", "empty");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"\"],\"cwd\":\"/\"}}", "empty command");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":\"ls -l\",\"cwd\":\"/\"}}", "not an array");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\\u0000b\"],\"cwd\":\"/\"}}", "NUL");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"x\"}}", "absolute");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"new\\nline\"}}",
               "job.name: control character U+000A at byte 3");
    /* C1 controls (U+009B: 8-bit CSI) and bidi overrides; other non-ASCII names pass */
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"ok\\u009b31m\"}}",
               "job.name: control character U+009B at byte 2");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"gpj.\\u202eexe\"}}",
               "job.name: invisible format character U+202E at byte 4");
    /* the soft hyphen, the Arabic letter mark and tag characters hide text too */
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"x\\u00ady\"}}",
               "job.name: invisible format character U+00AD at byte 1");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"x\\u061cy\"}}",
               "job.name: invisible format character U+061C at byte 1");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"x\\udb40\\udc41y\"}}",
               "job.name: invisible format character U+E0041 at byte 1");
    /* a name made from a command's file name follows the same rules */
    char nm[CARMA_PROTO_MAX_NAME + 1];
    carma_proto_name_from("run\x1b[31m\xe2\x80\xae" "exe.sh\xff", nm, sizeof nm);
    assert_string_equal(nm, "run?[31m?exe.sh?");
    carma_proto_name_from("caf\xc3\xa9", nm, sizeof nm);
    assert_string_equal(nm, "caf\xc3\xa9");
    carma_proto_name_from("", nm, sizeof nm);
    assert_string_equal(nm, "job");
    char longer[300];
    memset(longer, 'a', sizeof longer - 3);
    memcpy(longer + sizeof longer - 3, "\xc3\xa9", 2); /* a 2-byte character past the cut */
    longer[sizeof longer - 1] = 0;
    carma_proto_name_from(longer, nm, sizeof nm);
    assert_int_equal(strlen(nm), CARMA_PROTO_MAX_NAME);
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"name\":\"\"}}",
               "job.name: empty");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"]}}", "missing field 'cwd'");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\",\"gpus\":0}}",
               "out of range");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\",\"gpus\":65}}",
               "out of range");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\",\"env\":{\"1A\":\"x\"}}}",
               "invalid variable name");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\",\"env\":{\"A\":1}}}",
               "not a string");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"image_size\":224}}",
               "job.image_size: not [height, width]");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"image_size\":[224,0]}}",
               "each from 1 to 65536");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\"}}",
               "job.summary: given without job.batch");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"precision\":\"fp8\"}}",
               "job.precision: unknown precision 'fp8' (fp32, amp, bf16)");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"optimizer\":\"lion\"}}",
               "job.optimizer: unknown optimizer 'lion'");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"attention\":1}}",
               "job.attention: not a string");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"precision\":\"bf16\"}}",
               "job.precision: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"gradient_checkpointing\":1}}",
               "job.gradient_checkpointing: not true or false");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"gradient_checkpointing\":false}}",
               "job.gradient_checkpointing: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"gradient_accumulation\":\"yes\"}}",
               "job.gradient_accumulation: not true or false");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"gradient_accumulation\":true}}",
               "job.gradient_accumulation: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"heads\":8}}",
               "job.heads: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"heads\":0}}",
               "job.heads: 0 out of range [1, 4096]");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"heads\":\"8\"}}",
               "job.heads: not an integer");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"experts_per_token\":2}}",
               "job.experts_per_token: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"experts_per_token\":0}}",
               "job.experts_per_token: 0 out of range [1, 65536]");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"shared_layer_runs\":12}}",
               "job.shared_layer_runs: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"shared_layer_runs\":257}}",
               "job.shared_layer_runs: 257 out of range [1, 256]");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"tied_head\":true}}",
               "job.tied_head: given without job.summary");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\","
               "\"summary\":\"s\",\"batch\":1,\"tied_head\":1}}",
               "job.tied_head: not true or false");
    expect_bad("{\"v\":1,\"op\":\"submit\",\"job\":{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":0}}",
               "unknown field 'uid'"); /* the uid comes from SO_PEERCRED only */
}

static void test_ls_paging_bounds(void **state)
{
    (void)state;
    expect_bad("{\"v\":1,\"op\":\"ls\",\"limit\":0}", "request.limit: 0 out of range");
    expect_bad("{\"v\":1,\"op\":\"ls\",\"limit\":1001}", "out of range [1, 1000]");
    expect_bad("{\"v\":1,\"op\":\"ls\",\"after\":-1}", "request.after");
    expect_bad("{\"v\":1,\"op\":\"ls\",\"after\":\"7\"}", "request.after: not an integer");
    expect_bad("{\"v\":1,\"op\":\"ls\",\"all\":1}", "request.all: not a boolean");
}

/* argv is bounded as a whole (its JSON), so that the job's `show` answer fits a line:
 * 40 arguments of 8000 bytes each are fine one by one, not together. */
static void test_argv_total(void **state)
{
    (void)state;
    size_t cap = 41 * 8010 + 200;
    char *s = malloc(cap);
    for (int nargs = 30; nargs <= 40; nargs += 10) {
        strcpy(s, "{\"v\":1,\"op\":\"submit\",\"job\":{\"cwd\":\"/\",\"argv\":[\"x\"");
        size_t l = strlen(s);
        for (int i = 0; i < nargs; i++) {
            s[l++] = ',';
            s[l++] = '"';
            memset(s + l, 'a', 8000);
            l += 8000;
            s[l++] = '"';
        }
        strcpy(s + l, "]}}");
        if (nargs == 40) {
            expect_bad(s, "job.argv: 320");
            expect_bad(s, "more than 262144 in all");
        } else {
            struct carma_req q;
            struct carma_err err = {{0}};
            assert_int_equal(parse(s, &q, &err), 0);
            assert_int_equal(q.job.argc, 31);
            carma_req_free(&q);
        }
    }
    free(s);
}

/* The client side: a peer that never answers times out; a peer that answered and
 * closed before reading ("busy" at accept) still has its answer read. */
static void test_client_timeout_and_refusal(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    json_t *req = json_pack("{s:i,s:s}", "v", 1, "op", "ping");
    json_t *resp = NULL;
    struct carma_err err = {{0}};
    assert_int_equal(carma_client_call_timeout(sv[0], req, &resp, 100, &err), -ETIMEDOUT);
    assert_non_null(strstr(err.msg, "did not answer within 0.1 s"));
    close(sv[0]);
    close(sv[1]);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const char *busy = "{\"ok\":false,\"error\":\"busy\",\"message\":\"too many\"}\n";
    assert_int_equal(write(sv[1], busy, strlen(busy)), (ssize_t)strlen(busy));
    close(sv[1]); /* the send fails (EPIPE); the answer is there all the same */
    assert_int_equal(carma_client_call_timeout(sv[0], req, &resp, 1000, &err), 0);
    assert_string_equal(json_string_value(json_object_get(resp, "error")), "busy");
    json_decref(resp);
    close(sv[0]);
    /* closed without an answer: the send's error */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    assert_int_equal(carma_client_call_timeout(sv[0], req, &resp, 1000, &err), -EPIPE);
    assert_non_null(strstr(err.msg, "sending to carmad"));
    close(sv[0]);
    json_decref(req);
    /* $CARMA_TIMEOUT: seconds; invalid values keep the default */
    setenv("CARMA_TIMEOUT", "2.5", 1);
    assert_int_equal(carma_client_timeout_ms(), 2500);
    setenv("CARMA_TIMEOUT", "-1", 1);
    assert_int_equal(carma_client_timeout_ms(), CARMA_PROTO_TIMEOUT_S * 1000);
    setenv("CARMA_TIMEOUT", "5x", 1);
    assert_int_equal(carma_client_timeout_ms(), CARMA_PROTO_TIMEOUT_S * 1000);
    unsetenv("CARMA_TIMEOUT");
    assert_int_equal(carma_client_timeout_ms(), CARMA_PROTO_TIMEOUT_S * 1000);
}

static void test_bounds(void **state)
{
    (void)state;
    /* An argument longer than the bound. */
    size_t n = CARMA_PROTO_MAX_ARG + 100;
    char *s = malloc(n + 200);
    strcpy(s, "{\"v\":1,\"op\":\"submit\",\"job\":{\"cwd\":\"/\",\"argv\":[\"");
    size_t l = strlen(s);
    memset(s + l, 'a', n);
    strcpy(s + l + n, "\"]}}");
    expect_bad(s, "longer than");
    free(s);
    /* A line longer than the protocol allows is refused before parsing. */
    struct carma_req q;
    struct carma_err err = {{0}};
    assert_int_equal(carma_req_parse(&q, "x", CARMA_PROTO_MAX_LINE + 1, &err), -E2BIG);
    /* Too many arguments. */
    size_t cap = 8 * (CARMA_PROTO_MAX_ARGV + 10) + 100;
    char *m = malloc(cap);
    strcpy(m, "{\"v\":1,\"op\":\"submit\",\"job\":{\"cwd\":\"/\",\"argv\":[\"a\"");
    for (int i = 0; i < CARMA_PROTO_MAX_ARGV + 5; i++)
        strcat(m, ",\"a\"");
    strcat(m, "]}}");
    expect_bad(m, "more than");
    free(m);
}

static void test_responses(void **state)
{
    (void)state;
    json_t *e = carma_resp_error("notfound", "no job %d", 7);
    char *line;
    size_t len;
    assert_int_equal(carma_proto_dump(e, &line, &len), 0);
    assert_string_equal(line, "{\"ok\":false,\"error\":\"notfound\",\"message\":\"no job 7\"}\n");
    assert_int_equal(len, strlen(line));
    free(line);
    json_decref(e);
    char path[256];
    setenv("CARMA_SOCKET", "/x/y.sock", 1);
    assert_int_equal(carma_proto_default_socket(path, sizeof path), 0);
    assert_string_equal(path, "/x/y.sock");
    unsetenv("CARMA_SOCKET");
    assert_int_equal(carma_proto_default_socket(path, sizeof path), 0);
    assert_non_null(strstr(path, "carmad.sock"));
    /* a user's client without a carmad of its own finds the root carmad's socket; one
     * with CARMA_SOCKET, or whose own carmad's socket is there, keeps it */
    char dir[] = "/tmp/carma-test-sock.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sys[64], own[64];
    snprintf(sys, sizeof sys, "%s/system.sock", dir);
    snprintf(own, sizeof own, "%s/carma/carmad.sock", dir);
    setenv("XDG_RUNTIME_DIR", dir, 1);
    assert_int_equal(carma_proto_client_socket(1000, sys, path, sizeof path), 0);
    assert_string_equal(path, own); /* no system socket either: the user's own path */
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sys);
    assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(carma_proto_client_socket(1000, sys, path, sizeof path), 0);
    assert_string_equal(path, sys);
    assert_int_equal(carma_proto_client_socket(0, sys, path, sizeof path), 0);
    assert_string_equal(path, CARMA_SYSTEM_SOCKET); /* root: the root carmad's, as before */
    setenv("CARMA_SOCKET", "/x/y.sock", 1);
    assert_int_equal(carma_proto_client_socket(1000, sys, path, sizeof path), 0);
    assert_string_equal(path, "/x/y.sock");
    unsetenv("CARMA_SOCKET");
    char own_dir[64];
    snprintf(own_dir, sizeof own_dir, "%s/carma", dir);
    assert_int_equal(mkdir(own_dir, 0700), 0);
    int ofd = socket(AF_UNIX, SOCK_STREAM, 0);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", own);
    assert_int_equal(bind(ofd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(carma_proto_client_socket(1000, sys, path, sizeof path), 0);
    assert_string_equal(path, own); /* the user's own carmad comes first */
    close(ofd);
    close(sfd);
    unlink(own);
    unlink(sys);
    rmdir(own_dir);
    rmdir(dir);
    unsetenv("XDG_RUNTIME_DIR");
    struct carma_err err = {{0}};
    assert_true(carma_client_connect("/nonexistent/carmad.sock", &err) < 0);
    assert_non_null(strstr(err.msg, "cannot reach carmad"));
    assert_non_null(strstr(err.msg, "start carmad, or name the socket")); /* what to do */
}

/* An error message cut inside a UTF-8 character, or quoting bytes that are not UTF-8,
 * still makes an answer carmad can send. */
static void test_error_cut_utf8(void **state)
{
    (void)state;
    char big[4000];
    for (size_t k = 0; k < 3; k++) { /* the cut at each byte of a 2-byte character */
        size_t o = 0;
        for (size_t x = 0; x < k; x++)
            big[o++] = 'x';
        while (o + 2 < sizeof big) {
            memcpy(big + o, "\xc3\xa9", 2);
            o += 2;
        }
        big[o] = '\0';
        json_t *e = carma_resp_error("invalid", "command not found: %s", big);
        assert_non_null(e);
        const char *m = json_string_value(json_object_get(e, "message"));
        assert_non_null(m);
        assert_true(strlen(m) < CARMA_ERR_MAX);
        json_decref(e);
        struct carma_err err = {{0}};
        assert_int_equal(carma_err_set(&err, -EINVAL, "x: %s", big), -EINVAL);
        size_t n = strlen(err.msg);
        assert_true(n > CARMA_ERR_MAX - 4);
        assert_true((unsigned char)err.msg[n - 1] == 0xa9 || err.msg[n - 1] == 'x');
        carma_err_at(&err, "f", 3, "%s", big);
        n = strlen(err.msg);
        assert_true((unsigned char)err.msg[n - 1] == 0xa9 || err.msg[n - 1] == 'x');
    }
    json_t *e = carma_resp_error("invalid", "%s", "lat\xe9 \xe2\x82");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "lat\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd");
    json_decref(e);
    char s[8] = "a\xe2\x82";
    assert_int_equal(carma_utf8_cut(s, 3), 1);
    assert_string_equal(s, "a");
    char t[8] = "\xf0\x9f\x98\x80";
    assert_int_equal(carma_utf8_cut(t, 4), 4); /* whole */
    assert_int_equal(carma_utf8_cut(t, 3), 0);
    char u[8] = "ab\xff";
    assert_int_equal(carma_utf8_cut(u, 3), 3); /* not a cut: left alone */
    /* the request parser quotes a long non-ASCII field name whole */
    struct carma_req q;
    struct carma_err err = {{0}};
    char line[256] = "{\"v\":1,\"op\":\"ls\",\"x";
    for (int k = 0; k < 40; k++)
        strcat(line, "\xc3\xa9");
    strcat(line, "\":1}");
    assert_int_equal(carma_req_parse(&q, line, strlen(line), &err), -EINVAL);
    e = carma_resp_error("badrequest", "%s", err.msg);
    assert_non_null(e);
    json_decref(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_submit_ok),
        cmocka_unit_test(test_submit_umask),
        cmocka_unit_test(test_submit_time_limit),
        cmocka_unit_test(test_other_ops),
        cmocka_unit_test(test_drain_ops),
        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_responses),
        cmocka_unit_test(test_ls_paging_bounds),
        cmocka_unit_test(test_argv_total),
        cmocka_unit_test(test_client_timeout_and_refusal),
        cmocka_unit_test(test_error_cut_utf8),
        cmocka_unit_test(test_submit_after),
        cmocka_unit_test(test_ids_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
