/* Trace and catalog loaders: every format on small in-memory inputs (good and each
 * kind of bad), and the bundled data files. Run from the repository root. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/profile.h"
#include "sim/sim.h"
#include "sim/trace.h"
#include "util/csv.h"

#define MURI_HDR "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval\n"
#define CAT_HDR "name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s,est_horus_mib\n"
static const char cat_text[] = CAT_HDR "a,resnet,32,1,1000,10,0.5,0.2,0.2,30,1200\n"
                                       "b,vgg,64,2,20000,1.5,0.9,0.36,0.36,30,\n";

static struct sim_workload *cat;
static size_t ncat;

static int setup_cat(void **state)
{
    (void)state;
    struct carma_err err;
    return sim_catalog_parse("cat.csv", cat_text, strlen(cat_text), &cat, &ncat, &err);
}

static int teardown_cat(void **state)
{
    (void)state;
    free(cat);
    cat = NULL;
    return 0;
}

/* Parses `text` as format fmt and expects failure with `want` in the message, and an
 * untouched output. */
static void expect_bad_len(enum sim_trace_format fmt, const char *file, const char *text,
                           size_t len, const char *want)
{
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
    struct sim_trace t;
    memset(&t, 0x5a, sizeof t);
    struct sim_trace before = t;
    struct carma_err err = {{0}};
    int rc = sim_trace_parse(file, text, len, fmt, &o, &t, &err);
    if (rc == 0 || !strstr(err.msg, want))
        fail_msg("input %s: rc %d, message '%s', wanted '%s'", file, rc, err.msg, want);
    assert_memory_equal(&t, &before, sizeof t); /* never a partial trace */
}

static void expect_bad(enum sim_trace_format fmt, const char *file, const char *text,
                       const char *want)
{
    expect_bad_len(fmt, file, text, strlen(text), want);
}

/* The message of a failing parse (expect_bad's checks aside), for tests that look at
 * the whole of it. */
static const char *bad_msg(enum sim_trace_format fmt, const char *file, const char *text)
{
    static struct carma_err err;
    struct sim_trace t;
    memset(&err, 0, sizeof err);
    if (sim_trace_parse(file, text, strlen(text), fmt, NULL, &t, &err) == 0)
        fail_msg("input %s: parsed", file);
    return err.msg;
}

/* A NUL byte is named by its line in every format, even as the first byte (where
 * no format can be told). */
static void test_nul_bytes(void **state)
{
    (void)state;
    static const char g[] = "A3C\tc\ta\t0\t10\t5\t1\nA3\0C\tc\ta\t0\t10\t5\t1\n";
    expect_bad_len(SIM_TRACE_GAVEL, "g.trace", g, sizeof g - 1, "g.trace:2: NUL byte in text");
    static const char sh[] = "sleep 1\n\n\0python s/submit.py --task a.rad\n";
    expect_bad_len(SIM_TRACE_AUTO, "t.sh", sh, sizeof sh - 1, "t.sh:3: NUL byte in text");
    static const char start[] = "\0submit_s,workload\n0,a\n";
    expect_bad_len(SIM_TRACE_AUTO, "n.csv", start, sizeof start - 1, "n.csv:1: NUL byte in text");
    static const char m[] = MURI_HDR "0,1,0,1,dqn,1,10,0\n0,1,0,1,dqn,1\0,10,0\n";
    expect_bad_len(SIM_TRACE_MURI, "m.csv", m, sizeof m - 1, "m.csv:3: NUL byte in text");
    static const char rad[] = "#\nx\npython\nm\nd\n32\nexclusive\n1\n9\0\n";
    struct sim_workload w;
    struct carma_err err;
    assert_int_not_equal(sim_rad_parse("a.rad", "a", rad, sizeof rad - 1, &w, &err), 0);
    assert_string_equal(err.msg, "a.rad:9: NUL byte in text");
    /* A compressed or binary file is named as such, in any format, and in a catalog
     * or a .rad file too (not as a NUL byte in text). */
    static const char gz[] = "\x1f\x8b\x08\x08\0\0\0\0\0\x03t1.csv\0\x9d\x93";
    expect_bad_len(SIM_TRACE_AUTO, "t1.csv.gz", gz, sizeof gz - 1,
                   "t1.csv.gz: looks compressed (gzip): decompress it first");
    expect_bad_len(SIM_TRACE_MURI, "t1.csv.gz", gz, sizeof gz - 1,
                   "t1.csv.gz: looks compressed (gzip)");
    struct sim_workload *c;
    size_t nc;
    assert_int_not_equal(sim_catalog_parse("w.csv.gz", gz, sizeof gz - 1, &c, &nc, &err), 0);
    assert_string_equal(err.msg, "w.csv.gz: looks compressed (gzip): decompress it first");
    char bin[600];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (char)(i * 37 % 251);
    expect_bad_len(SIM_TRACE_AUTO, "a.out", bin, sizeof bin, "a.out: binary file, not text");
    assert_int_not_equal(sim_rad_parse("a.rad", "a", bin, sizeof bin, &w, &err), 0);
    assert_string_equal(err.msg, "a.rad: binary file, not text");
}

/* A CR that is not part of a CRLF is refused by line in Gavel, .sh and .rad files too,
 * with the CSV reader's message (docs/traces.md); a CRLF is fine. */
static void test_bare_cr(void **state)
{
    (void)state;
    expect_bad(SIM_TRACE_GAVEL, "g.trace", "A3C\tc\ta\t0\t10\t5\t1\r\nA3C\tc\rd\ta\t0\t10\t5\t1\n",
               "g.trace:2: a carriage return without a line feed");
    expect_bad(SIM_TRACE_GAVEL, "g.trace", "A3C\tc\ta\t0\t10\t5\t1\rA3C\tc\ta\t0\t10\t6\t1\n",
               "g.trace:1: a carriage return without a line feed");
    expect_bad(SIM_TRACE_GAVEL, "g.trace", "A3C\tc\ta\t0\t10\t5\t1\r\r\n",
               "g.trace:1: a carriage return without a line feed");
    expect_bad(SIM_TRACE_CARMA_SH, "t.sh",
               "sleep 1\r\nsleep 5\r\rpython s/submit.py --task a.rad\n",
               "t.sh:2: a carriage return without a line feed");
    static const char rad[] = "#\nx\npython\nm\nd\n32\r\r\nexclusive\n1\n9\n";
    struct sim_workload w;
    struct carma_err err;
    assert_int_not_equal(sim_rad_parse("a.rad", "a", rad, sizeof rad - 1, &w, &err), 0);
    assert_string_equal(err.msg, "a.rad:6: a carriage return without a line feed");
    static const char radmac[] = "#\rx\rpython\rm\rd\r32\rexclusive\r1\r9\r";
    assert_int_not_equal(sim_rad_parse("a.rad", "a", radmac, sizeof radmac - 1, &w, &err), 0);
    assert_string_equal(err.msg, "a.rad:1: " CARMA_CR_ONLY_MSG);
    static const char radcrlf[] = "#\r\nx\r\npython\r\nm\r\nd\r\n32\r\nexclusive\r\n1\r\n9\r\n";
    if (sim_rad_parse("a.rad", "a", radcrlf, sizeof radcrlf - 1, &w, &err))
        fail_msg("CRLF .rad: %s", err.msg);
    assert_int_equal(w.batch, 32);
}

static void expect_good(enum sim_trace_format fmt, const char *file, const char *text,
                        struct sim_trace *t)
{
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
    struct carma_err err = {{0}};
    int rc = sim_trace_parse(file, text, strlen(text), fmt, &o, t, &err);
    if (rc)
        fail_msg("%s: %s", file, err.msg);
}

/* Jitter: every seed jitters (none gives xorshift's all-zero state, which scaled every
 * run time by one factor), and a jittered run time past the loaders' limit is an error
 * naming the job, with the trace left as it was. */
static void test_jitter(void **state)
{
    (void)state;
    char text[4096];
    size_t o = (size_t)snprintf(text, sizeof text, "submit_s,workload\n");
    for (int i = 0; i < 50; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "%d,a\n", i);
    static const uint64_t seeds[] = {1, 1018231460777725123ull, 1018231460777725124ull};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        struct sim_trace t;
        expect_good(SIM_TRACE_CARMA_CSV, "j.csv", text, &t);
        double d0 = t.jobs[0].duration_s;
        struct carma_err err = {{0}};
        assert_int_equal(sim_trace_jitter(&t, 0.1, seeds[k], "j.csv", &err), 0);
        size_t same = 0;
        double lo = 1e300, hi = 0;
        for (size_t i = 1; i < t.njobs; i++) {
            same += t.jobs[i].duration_s == t.jobs[0].duration_s;
            double f = t.jobs[i].duration_s / d0;
            lo = f < lo ? f : lo;
            hi = f > hi ? f : hi;
        }
        if (same || lo < 0.6 || hi > 1.7 || lo > 0.97 || hi < 1.03)
            fail_msg("seed %llu: %zu equal run times, factors %g to %g",
                     (unsigned long long)seeds[k], same, lo, hi);
        sim_trace_free(&t);
    }
    /* the catalog's longest run time, 1e8 min = 6e9 s: one draw in three at --jitter 2
     * pushes it over the limit of 1e10 s */
    static const char big_cat[] = CAT_HDR "big,resnet,32,1,1000,1e8,0.5,0.2,0.2,30,\n";
    struct sim_workload *bc;
    size_t nbc;
    struct carma_err err = {{0}};
    assert_int_equal(sim_catalog_parse("big.csv", big_cat, strlen(big_cat), &bc, &nbc, &err), 0);
    static const char big[] = "submit_s,workload\n0,big\n1,big\n2,big\n3,big\n4,big\n5,big\n";
    struct sim_trace_opts opts = {.catalog = bc, .ncatalog = nbc};
    struct sim_trace t;
    assert_int_equal(
        sim_trace_parse("big.csv", big, strlen(big), SIM_TRACE_CARMA_CSV, &opts, &t, &err), 0);
    free(bc);
    assert_int_equal(sim_trace_jitter(&t, 2, 1, "big.csv", &err), -EINVAL);
    if (!strstr(err.msg, "big.csv:") || !strstr(err.msg, ": job big: run time 6e9 s times ") ||
        !strstr(err.msg, "not positive or above 1e10 s"))
        fail_msg("message: %s", err.msg);
    for (size_t i = 0; i < t.njobs; i++)
        assert_true(t.jobs[i].duration_s == 6e9);
    sim_trace_free(&t);
}

/* ---- catalog ---- */

static void test_catalog_good(void **state)
{
    (void)state;
    assert_int_equal(ncat, 2);
    assert_string_equal(cat[0].name, "a");
    assert_string_equal(cat[1].model, "vgg");
    assert_int_equal(cat[1].gpus, 2);
    assert_int_equal(cat[1].batch, 64);
    assert_float_equal(cat[1].duration_s, 90.0, 1e-9);
    assert_float_equal(cat[0].est_mib[SIM_EST_HORUS], 1200, 1e-3);
    assert_float_equal(cat[1].est_mib[SIM_EST_HORUS], 0, 0); /* empty: not given */
    assert_float_equal(cat[0].smact, 0.5, 1e-6);
}

static void cat_bad(const char *text, const char *want)
{
    struct sim_workload *w = (void *)0x1;
    size_t n = 77;
    struct carma_err err = {{0}};
    int rc = sim_catalog_parse("w.csv", text, strlen(text), &w, &n, &err);
    if (rc == 0 || !strstr(err.msg, want))
        fail_msg("rc %d, message '%s', wanted '%s'", rc, err.msg, want);
    assert_ptr_equal(w, (void *)0x1);
    assert_int_equal(n, 77);
}

static void test_catalog_bad(void **state)
{
    (void)state;
    cat_bad("", "w.csv: empty");
    cat_bad("name,model,batch,gpus,mem_mib,total_min,smocc,drama,ramp_s\n",
            "w.csv:1: missing column 'smact'");
    cat_bad(CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,30,\na,m,1,1,100,1,0.5,0.2,0.2,30,\n",
            "w.csv:3: workload 'a' defined twice");
    cat_bad(CAT_HDR "a,m,1,1,100,1,1.5,0.2,0.2,30,\n", "w.csv:2: workload 'a': bad smact");
    cat_bad(CAT_HDR "a,m,1,0,100,1,0.5,0.2,0.2,30,\n", "bad gpus");
    cat_bad(CAT_HDR "a,m,1,1,-5,1,0.5,0.2,0.2,30,\n", "bad mem_mib");
    cat_bad(CAT_HDR "a,m,1,1,100,0,0.5,0.2,0.2,30,\n", "bad total_min");
    cat_bad(CAT_HDR "a,m,1.5,1,100,1,0.5,0.2,0.2,30,\n", "bad batch");
    cat_bad(CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,-1,\n", "bad ramp_s");
    cat_bad(CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,30\n", "w.csv:2: 10 fields, the header has 11");
    cat_bad(CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,30,x\n",
            "w.csv:2: workload 'a': bad est_horus_mib 'x' (MiB from 0 to 1e7)");
    /* Range errors state the range. */
    cat_bad(CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,1e9,\n",
            "w.csv:2: workload 'a': bad ramp_s '1e9' (seconds from 0 to 1e6)");
    cat_bad(CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,30,2e7\n", "bad est_horus_mib '2e7' (MiB from 0");
    cat_bad(CAT_HDR "a,m,2e9,1,100,1,0.5,0.2,0.2,30,\n", "bad batch '2e9' (a whole number from 0");
    cat_bad(CAT_HDR, "no workloads");
    cat_bad(CAT_HDR ",m,1,1,100,1,0.5,0.2,0.2,30,\n", "name empty");
    cat_bad(CAT_HDR "\"a\nb\",m,1,1,100,1,0.5,0.2,0.2,30,\n",
            "w.csv:2: workload name 'a\\nb' holds a control character");
    cat_bad(CAT_HDR "a,\"\x1b[2J\",1,1,100,1,0.5,0.2,0.2,30,\n",
            "w.csv:2: model name '\\x1B[2J' holds a control character");
    /* a C1 control (U+009B, CSI) and a byte that is not UTF-8 as well */
    cat_bad(CAT_HDR "x\xC2\x9B" "2J,m,1,1,100,1,0.5,0.2,0.2,30,\n",
            "w.csv:2: workload name 'x\\xC2\\x9B2J' holds a control character or is not UTF-8");
    cat_bad(CAT_HDR "a,m\x9B,1,1,100,1,0.5,0.2,0.2,30,\n", "model name 'm\\x9B' holds a control");
    cat_bad("name,model,batch,gpus,mem_mib,mem_mib,total_min,smact,smocc,drama,ramp_s\n",
            "w.csv:1: column 'mem_mib' given twice");
}

/* ---- carma CSV ---- */

static void test_carma_csv_good(void **state)
{
    (void)state;
    struct sim_trace t;
    expect_good(SIM_TRACE_AUTO, "t.csv", "submit_s,workload\n0,a\n5,b\n5,a\r\n\n7.5,b\n", &t);
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.nworkloads, 2);
    assert_float_equal(t.jobs[3].submit_s, 7.5, 0);
    assert_string_equal(t.workloads[t.jobs[1].workload].name, "b");
    assert_int_equal(t.jobs[1].gpus, 2);
    assert_float_equal(t.jobs[1].mem_mib, 20000, 0);
    assert_float_equal(t.jobs[1].duration_s, 90, 1e-9);
    assert_float_equal(t.jobs[0].est_mib[SIM_EST_HORUS], 1200, 1e-3);
    assert_float_equal(t.jobs[0].smact, 0.5, 1e-6);
    sim_trace_free(&t);
    /* A time too small for a double is in range: it reads as the nearest one. */
    expect_good(SIM_TRACE_AUTO, "t.csv", "submit_s,workload\n1e-400,a\n4.9e-324,a\n", &t);
    assert_true(t.jobs[0].submit_s == 0);
    assert_true(t.jobs[1].submit_s > 0 && t.jobs[1].submit_s < 1e-300);
    sim_trace_free(&t);
}

static void test_carma_csv_bad(void **state)
{
    (void)state;
    const enum sim_trace_format F = SIM_TRACE_CARMA_CSV;
    expect_bad(F, "t.csv", "submit_s,workload\n0,a\n3,zzz\n", "t.csv:3: unknown workload 'zzz'");
    expect_bad(F, "t.csv", "submit_s,workload\n5,a\n3,b\n", "t.csv:3: out of order");
    expect_bad(F, "t.csv", "submit_s,workload\n2e9,a\n1e9,b\n",
               "t.csv:3: out of order: arrives at 1e9 s, before the previous job (2e9 s)");
    expect_bad(F, "t.csv", "submit_s,workload\n-1,a\n", "t.csv:2: arrival time -1");
    expect_bad(F, "t.csv", "submit_s,workload\nabc,a\n",
               "t.csv:2: submit_s 'abc': not a number of seconds from 0 to 1e10");
    expect_bad(F, "t.csv", "submit_s,workload\n1e400,a\n", "t.csv:2: submit_s '1e400': not a");
    expect_bad(F, "t.csv", "submit_s,wl\n0,a\n", "t.csv:1: missing column 'workload'");
    expect_bad(F, "t.csv", "workload\na\n", "missing column 'submit_s'");
    expect_bad(F, "t.csv", "submit_s,workload\n0,a,x\n", "t.csv:2: 3 fields, the header has 2");
    expect_bad(F, "t.csv", "submit_s,workload\n0\n", "t.csv:2: 1 field, the header has 2");
    /* A byte order mark out of place (files joined) is shown, not left invisible. */
    expect_bad(F, "t.csv", "submit_s,workload\n\xef\xbb\xbf" "0,a\n",
               "t.csv:2: submit_s '\\uFEFF0': not a number");
    expect_bad(F, "t.csv", "submit_s,workload\n0,\"a\n", "t.csv:2: unterminated");
    /* A record spanning lines is named by its first line; values are quoted with
     * escapes, never raw control bytes. */
    expect_bad(F, "t.csv", "submit_s,workload\n0,\"Xcep\ntion\"\n",
               "t.csv:2: unknown workload 'Xcep\\ntion' (not");
    expect_bad(F, "t.csv", "submit_s,workload\n\"1\x7f\r\",a\n",
               "t.csv:2: submit_s '1\\x7F\\r': not");
    expect_bad(F, "t.csv", "submit_s,workload\n0,\"a\nb\",x\n", "t.csv:2: 3 fields, the header");
    expect_bad(F, "t.csv", "", "t.csv: empty");
    expect_bad(F, "t.csv", "submit_s,workload,workload\n0,a,b\n",
               "t.csv:1: column 'workload' given twice");
    expect_bad(SIM_TRACE_AUTO, "t.csv", "submit_s,submit_s,workload\n0,5,a\n",
               "t.csv:1: column 'submit_s' given twice");
    /* Without a catalog. */
    struct sim_trace t;
    struct carma_err err;
    const char *text = "submit_s,workload\n0,a\n";
    assert_int_not_equal(sim_trace_parse("t.csv", text, strlen(text), F, NULL, &t, &err), 0);
    assert_non_null(strstr(err.msg, "needs a workload catalog"));
}

static void test_bounds(void **state)
{
    (void)state;
    /* More than SIM_TRACE_MAX_BYTES is refused before parsing. */
    struct sim_trace t;
    struct carma_err err;
    assert_int_not_equal(sim_trace_parse("big.csv", "submit_s,workload\n",
                                         (size_t)SIM_TRACE_MAX_BYTES + 1, SIM_TRACE_CARMA_CSV,
                                         NULL, &t, &err),
                         0);
    assert_non_null(strstr(err.msg, "larger than"));
}

/* ---- detection and names ---- */

static void test_detect(void **state)
{
    (void)state;
    assert_int_equal(sim_trace_detect("x", "submit_s,workload\n", 18), SIM_TRACE_CARMA_CSV);
    const char *m = "job_id,num_gpu,submit_time,iterations\n";
    assert_int_equal(sim_trace_detect("x", m, strlen(m)), SIM_TRACE_MURI);
    const char *a = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
    assert_int_equal(sim_trace_detect("x", a, strlen(a)), SIM_TRACE_ALIBABA);
    assert_int_equal(sim_trace_detect("x", "sleep 3\n", 8), SIM_TRACE_CARMA_SH);
    assert_int_equal(sim_trace_detect("x", "a\tb\tc\td\te\tf\tg\n", 14), SIM_TRACE_GAVEL);
    /* Gavel's 9- and 10-field layouts, and the older 6 fields the loader names. */
    const char *g10 = "a\tb\tc\td\te\tf\tg\th\ti\tj\n", *g9 = g10 + 2, *g6 = g10 + 8;
    assert_int_equal(sim_trace_detect("x", g10, strlen(g10)), SIM_TRACE_GAVEL);
    assert_int_equal(sim_trace_detect("x", g9, strlen(g9)), SIM_TRACE_GAVEL);
    assert_int_equal(sim_trace_detect("x", g6, strlen(g6)), SIM_TRACE_GAVEL);
    assert_int_equal(sim_trace_detect("x", g10 + 4, strlen(g10 + 4)), SIM_TRACE_AUTO); /* 8 */
    /* CSV headers by the set of their names, in any order (quoted too). */
    const char *mr = "model_name,duration,\"batch_size\",submit_time,num_gpu,job_id,x\r\n";
    assert_int_equal(sim_trace_detect("x", mr, strlen(mr)), SIM_TRACE_MURI);
    const char *ar = "num_gpu,creation_time,name,gpu_milli,deletion_time,scheduled_time\n";
    assert_int_equal(sim_trace_detect("x", ar, strlen(ar)), SIM_TRACE_ALIBABA);
    const char *mg = "gpu_milli,num_gpu,name\n"; /* a multigpu list, reordered */
    assert_int_equal(sim_trace_detect("x", mg, strlen(mg)), SIM_TRACE_ALIBABA);
    const char *cr = "workload,submit_s\n";
    assert_int_equal(sim_trace_detect("x", cr, strlen(cr)), SIM_TRACE_CARMA_CSV);
    const char *partial = "model_name,duration,batch_size,num_gpu,job_id\n"; /* no submit_time */
    assert_int_equal(sim_trace_detect("x", partial, strlen(partial)), SIM_TRACE_AUTO);
    /* A header of two formats is not guessed, even from the documented first columns. */
    const char *both = "job_id,num_gpu,submit_time,model_name,batch_size,duration,name,gpu_milli\n";
    assert_int_equal(sim_trace_detect("x.trace", both, strlen(both)), SIM_TRACE_AUTO);
    expect_bad(SIM_TRACE_AUTO, "x.csv", both, "x.csv: cannot tell the trace format");
    struct sim_trace r;
    expect_good(SIM_TRACE_AUTO, "r.csv",
                CARMA_BOM "model_name,job_id,submit_time,num_gpu,batch_size,duration\n"
                          "dqn,0,0,1,1,10\n",
                &r);
    assert_int_equal(r.njobs, 1);
    sim_trace_free(&r);
    assert_int_equal(sim_trace_detect("x.trace", "", 0), SIM_TRACE_GAVEL);
    assert_int_equal(sim_trace_detect("x.sh", "", 0), SIM_TRACE_CARMA_SH);
    assert_int_equal(sim_trace_detect("x.txt", "hello\n", 6), SIM_TRACE_AUTO);
    for (int f = SIM_TRACE_AUTO; f <= SIM_TRACE_ALIBABA; f++)
        assert_int_equal(sim_trace_format_parse(sim_trace_format_name((enum sim_trace_format)f)),
                         f);
    assert_int_equal(sim_trace_format_parse("nope"), -1);
    assert_null(sim_trace_format_name((enum sim_trace_format)99));
    expect_bad(SIM_TRACE_AUTO, "x.txt", "hello\n", "x.txt: cannot tell the trace format");
    /* One byte order mark is skipped; a second one is refused whatever the format. */
    struct sim_trace t;
    expect_good(SIM_TRACE_AUTO, "b.csv", CARMA_BOM "submit_s,workload\n0,a\n", &t);
    sim_trace_free(&t);
    for (int f = SIM_TRACE_AUTO; f <= SIM_TRACE_ALIBABA; f++)
        expect_bad((enum sim_trace_format)f, "b.csv",
                   CARMA_BOM CARMA_BOM "submit_s,workload\n0,a\n", "b.csv:1: " CARMA_BOM2_MSG);
    cat_bad(CARMA_BOM CARMA_BOM CAT_HDR "a,m,1,1,100,1,0.5,0.2,0.2,30,\n",
            "w.csv:1: " CARMA_BOM2_MSG);
}

/* ---- Muri ---- */

static void test_muri_good(void **state)
{
    (void)state;
    struct sim_trace t;
    expect_good(SIM_TRACE_AUTO, "m.csv",
                MURI_HDR "0,1,5000000,10,resnet18,128,2000000,0\n"
                         "1,8,6500000,10,vgg16,16,1000000,0\n"
                         "2,1,6500000,10,resnet18,128,3000000,0\n",
                &t);
    assert_int_equal(t.njobs, 3);
    assert_int_equal(t.nworkloads, 2);
    assert_float_equal(t.jobs[0].submit_s, 0, 0); /* relative to the first arrival */
    assert_float_equal(t.jobs[1].submit_s, 1.5, 1e-9);
    assert_float_equal(t.jobs[0].duration_s, 2.0, 1e-9);
    assert_int_equal(t.jobs[1].gpus, 8);
    const struct sim_model_profile *p = sim_model_profile_find("vgg16");
    assert_non_null(p);
    assert_float_equal(t.jobs[1].mem_mib, p->base_mib + 16 * p->per_sample_mib, 0.01);
    assert_float_equal(t.jobs[1].smact,
                       sim_profile_smact(t.jobs[1].mem_mib, SIM_PROFILE_CARMA_FLOOR_MIB), 1e-6);
    assert_float_equal(t.jobs[1].ramp_s, SIM_PROFILE_RAMP_S, 0);
    assert_string_equal(t.workloads[t.jobs[0].workload].name, "resnet18-b128");
    sim_trace_free(&t);
}

static void test_muri_bad(void **state)
{
    (void)state;
    const enum sim_trace_format F = SIM_TRACE_MURI;
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,alexnet,1,10,0\n",
               "m.csv:2: 1 unknown model: 'alexnet' (line 2, 1 job). carma's model table is "
               "built in");
    expect_bad(F, "m.csv", MURI_HDR "0,1,9,1,dqn,1,10,0\n1,1,8,1,dqn,1,10,0\n",
               "m.csv:3: out of order");
    expect_bad(F, "m.csv", MURI_HDR "0,1,-9,1,dqn,1,10,0\n", "m.csv:2: submit_time '-9'");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,dqn,1,0,0\n", "m.csv:2: duration '0'");
    expect_bad(F, "m.csv", MURI_HDR "0,0,0,1,dqn,1,10,0\n", "m.csv:2: num_gpu '0'");
    expect_bad(F, "m.csv", MURI_HDR "0,65,0,1,dqn,1,10,0\n", "num_gpu '65'");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,dqn,x,10,0\n", "batch_size 'x'");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,dqn,1,1e308,0\n",
               "m.csv:2: duration '1e308': not a whole number of us from 1 to 1e16");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,dqn,1,99999999999999999999,0\n",
               "duration '99999999999999999999': not a whole number of us from 1 to 1e16");
    /* Above the bound even as the first arrival (times are relative to it). */
    expect_bad(F, "m.csv", MURI_HDR "0,1,20000000000000000,1,dqn,1,10,0\n",
               "m.csv:2: submit_time '20000000000000000': not a whole number of us from 0 to");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,CycleGAN,1000000,10,0\n",
               "m.csv:2: peak memory 2e9 MiB: not positive or above 1e7 MiB");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,\"\x1b]0;x\x07\",1,10,0\n",
               "m.csv:2: 1 unknown model: '\\x1B]0;x\\x07' (line 2");
    expect_bad(F, "m.csv", "job_id,num_gpu,submit_time,model_name,batch_size\n0,1,0,dqn,1\n",
               "m.csv:1: missing column 'duration'");
    expect_bad(F, "m.csv", "job_id,num_gpu,submit_time,model_name,batch_size,duration,duration\n",
               "m.csv:1: column 'duration' given twice");
    expect_bad(F, "m.csv", MURI_HDR "0,1,0,1,dqn,1,10\n", "m.csv:2: 7 fields, the header has 8");
}

/* ---- Gavel ---- */

static void test_gavel_good(void **state)
{
    (void)state;
    struct sim_trace t;
    expect_good(SIM_TRACE_AUTO, "g.trace",
                "ResNet-50 (batch size 64)\tcd x && python3 main.py\t--num_steps\t1\t5458\t10.0\t1\n"
                "A3C\tcd y\t--max-steps\t0\t8233\t12.5\t4\r\n",
                &t);
    assert_int_equal(t.njobs, 2);
    assert_float_equal(t.jobs[0].submit_s, 0, 0);
    assert_float_equal(t.jobs[1].submit_s, 2.5, 1e-9);
    const struct sim_model_profile *p = sim_model_profile_find("ResNet-50 (batch size 64)");
    assert_float_equal(t.jobs[0].duration_s, 5458 / p->steps_per_s, 1e-6);
    assert_float_equal(t.jobs[0].mem_mib, p->base_mib + 64 * p->per_sample_mib, 0.01);
    assert_int_equal(t.jobs[1].gpus, 4);
    assert_float_equal(t.jobs[1].duration_s, 1000, 1.0);
    assert_int_equal(t.weighted_jobs + t.slo_jobs, 0);
    sim_trace_free(&t);
    /* 10 fields (physical_cluster/): job type, command, working directory, step
     * argument, needs data dir, total steps, scale factor, priority weight, SLO,
     * arrival. */
    expect_good(SIM_TRACE_AUTO, "g10",
                "ResNet-50 (batch size 64)\tpython3 main.py -b 64 %s/imagenet\timage_classification/"
                "imagenet\t--num_minibatches\t1\t5458\t2\t1\t-1.000000\t100\n"
                "A3C\tpython3 main.py\trl\t--max-steps\t0\t8233\t1\t1\t-1.000000\t110.5\n",
                &t);
    assert_int_equal(t.njobs, 2);
    assert_float_equal(t.jobs[0].duration_s, 5458 / p->steps_per_s, 1e-6);
    assert_float_equal(t.jobs[0].mem_mib, p->base_mib + 64 * p->per_sample_mib, 0.01);
    assert_int_equal(t.jobs[0].gpus, 2);
    assert_float_equal(t.jobs[1].submit_s, 10.5, 1e-9);
    assert_int_equal(t.jobs[1].gpus, 1);
    assert_float_equal(t.jobs[1].duration_s, 1000, 1.0);
    assert_int_equal(t.weighted_jobs + t.slo_jobs, 0); /* weight 1, SLO -1: none */
    sim_trace_free(&t);
    /* 9 fields (parse_trace @52d9895): the 10 without the working directory. */
    expect_good(SIM_TRACE_AUTO, "g9",
                "ResNet-50 (batch size 64)\tcd x\t--num_minibatches\t1\t5458\t4\t2.5\t1.2\t7\n"
                "A3C\tcd y\t--max-steps\t0\t8233\t1\t1\t0\t9\r\n"
                "A3C\tcd y\t--max-steps\t0\t8233\t8\t1\t-0.5\t9\n",
                &t);
    assert_int_equal(t.njobs, 3);
    assert_int_equal(t.jobs[0].gpus, 4);
    assert_float_equal(t.jobs[0].duration_s, 5458 / p->steps_per_s, 1e-6);
    assert_float_equal(t.jobs[1].submit_s, 2, 1e-9);
    assert_int_equal(t.jobs[2].gpus, 8);
    assert_int_equal(t.weighted_jobs, 1); /* 2.5 */
    assert_int_equal(t.slo_jobs, 2);      /* 1.2 and 0; -0.5 is none */
    sim_trace_free(&t);
}

/* Unknown model names and job types: one message lists each with its first line and
 * its jobs (the first SIM_UNKNOWN_LIST, then how many more), says the table is built
 * in and what to do, and names no file carma does not read. */
static void test_unknown_names(void **state)
{
    (void)state;
    const char *m = bad_msg(SIM_TRACE_MURI, "m.csv",
                            MURI_HDR "0,1,0,1,resnet50,1,10,0\n"
                                     "1,1,1,1,dqn,1,10,0\n"
                                     "2,1,2,1,ResNet18,1,10,0\n"
                                     "3,1,3,1,resnet50,1,10,0\n");
    assert_string_equal(m, "m.csv:2: 2 unknown models: 'resnet50' (line 2, 2 jobs), 'ResNet18' "
                           "(line 4, 1 job). carma's model table is built in (tools/gen_profiles.c "
                           "writes it into src/sim/trace_models.c): rename them in the trace to "
                           "names it has (docs/traces.md lists them), or add profiles there and "
                           "rebuild carma");
    const char *g = bad_msg(SIM_TRACE_GAVEL, "g.trace",
                            "LM (batch size 30)\tc\ta\t0\t10\t1\t1\n"
                            "A3C\tc\ta\t0\t10\t2\t1\n"
                            "ResNet-18\tc\ta\t0\t10\t3\t1\n"
                            "resnet18\tc\ta\t0\t10\t3\t1\n" /* Muri's: no throughput */
                            "ResNet-18\tc\ta\t0\t10\t3\t1\n");
    assert_non_null(strstr(g, "g.trace:1: 3 unknown job types: 'LM (batch size 30)' (line 1, 1 "
                              "job), 'ResNet-18' (line 3, 2 jobs), 'resnet18' (line 4, 1 job). "
                              "carma's model table is built in"));
    assert_null(strstr(g, "model-profiles"));
    /* Twelve names: ten listed, the rest counted. */
    char big[4096];
    size_t o = (size_t)snprintf(big, sizeof big, MURI_HDR);
    for (int i = 0; i < 12; i++)
        for (int k = 0; k <= (i == 11); k++)
            o += (size_t)snprintf(big + o, sizeof big - o, "%d,1,%d,1,m%d,1,10,0\n", i, i, i);
    m = bad_msg(SIM_TRACE_AUTO, "m.csv", big);
    assert_non_null(strstr(m, "m.csv:2: 12 unknown models: 'm0' (line 2, 1 job), 'm1' (line 3"));
    assert_non_null(strstr(m, "'m9' (line 11, 1 job) and 2 more (3 jobs). carma's model table"));
    assert_null(strstr(m, "'m10'"));
    /* Long names: fewer listed, so that the message keeps its end. */
    o = (size_t)snprintf(big, sizeof big, MURI_HDR);
    for (int i = 0; i < 10; i++)
        o += (size_t)snprintf(big + o, sizeof big - o,
                              "%d,1,%d,1,model-name-long-enough-to-fill-a-whole-kilobyte-message-indeed-%d,1,10,0\n", i, i, i);
    m = bad_msg(SIM_TRACE_MURI, "m.csv", big);
    assert_true(strlen(m) < CARMA_ERR_MAX - 1);
    assert_non_null(strstr(m, "m.csv:2: 10 unknown models: 'model-name-long-enough-to-fill-a-whole-kilobyte-message-indeed-0' (line 2, 1 job), "));
    assert_non_null(strstr(m, " more ("));
    assert_non_null(strstr(m, "and rebuild carma"));
    /* Any other error still stops the read at its line. */
    m = bad_msg(SIM_TRACE_MURI, "m.csv", MURI_HDR "0,1,0,1,resnet50,1,10,0\n0,1,0,1,dqn,x,10,0\n");
    assert_non_null(strstr(m, "m.csv:3: batch_size 'x'"));
}

static void test_gavel_bad(void **state)
{
    (void)state;
    const enum sim_trace_format F = SIM_TRACE_GAVEL;
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\n",
               "g.trace:1: 5 tab-separated fields: carma reads Gavel's layouts of 7 fields");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t1\t1\tx\n",
               "g.trace:1: 8 tab-separated fields: carma reads Gavel's layouts of 7 fields (job "
               "type, command, step argument, needs data dir, total steps, arrival s, scale "
               "factor), 9 (job type, command, step argument, needs data dir, total steps, scale "
               "factor, priority weight, SLO, arrival s) and 10 (the 9 with a working directory "
               "after the command)");
    expect_bad(F, "g.trace", "A3C\tc\tw\ta\t0\t10\t1\t1\t-1\t0\tx\n",
               "g.trace:1: more than 10 tab-separated fields");
    /* Gavel's older layout names no batch size: refused, saying so. */
    expect_bad(F, "g.trace", "ResNet-18\tcd x && python3 main.py\t--num_steps\t101792\t10\t1\n",
               "g.trace:1: 6 tab-separated fields: Gavel's older layout (job type, command, step "
               "argument, total steps, arrival, scale factor), whose job types (here 'ResNet-18') "
               "name no batch size");
    /* One layout per file. */
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t1\t1\nA3C\tc\tw\ta\t0\t10\t1\t1\t-1\t2\n",
               "g.trace:2: 10 tab-separated fields, but line 1 has 7: one Gavel layout per file");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t1\t1\t-1\t2\n\nA3C\tc\ta\t0\t10\t1\n",
               "g.trace:3: 6 tab-separated fields, but line 1 has 9");
    /* Priority weight and SLO (9 and 10 fields): read and checked. */
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t1\t0\t-1\t2\n",
               "g.trace:1: priority weight '0': not a number above 0 and up to 1e6");
    expect_bad(F, "g.trace", "A3C\tc\tw\ta\t0\t10\t1\tx\t-1\t2\n", "g.trace:1: priority weight 'x'");
    expect_bad(F, "g.trace", "A3C\tc\tw\ta\t0\t10\t1\t1\tnan\t2\n",
               "g.trace:1: SLO 'nan': not a number from -1e6 to 1e6 (negative: none)");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t1\t1\t2e6\t2\n", "g.trace:1: SLO '2e6'");
    /* The fields of each layout are where Gavel puts them (arrival last in 9 and 10). */
    expect_bad(F, "g.trace", "A3C\tc\tw\ta\t0\t10\t1\t1\t-1\t-3\n", "g.trace:1: arrival '-3'");
    expect_bad(F, "g.trace", "A3C\tc\tw\ta\t0\t10\t65\t1\t-1\t3\n",
               "g.trace:1: scale factor '65'");
    expect_bad(F, "g.trace", "A3C\tc\ta\t2\t10\t1\t1\t-1\t3\n", "g.trace:1: needs-data-dir field '2'");
    expect_bad(F, "g.trace", "A3C\tc\tw\ta\t0\t0\t1\t1\t-1\t3\n", "g.trace:1: total steps '0'");
    expect_bad(F, "g.trace", "GAN\tc\ta\t0\t10\t1\t1\n", "g.trace:1: 1 unknown job type: 'GAN'");
    expect_bad(F, "g.trace", "LM (batch size 7)\tc\ta\t0\t10\t1\t1\n", "unknown job type");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t5\t1\nA3C\tc\ta\t0\t10\t4\t1\n",
               "g.trace:2: out of order");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t-5\t1\n", "g.trace:1: arrival '-5'");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t0\t5\t1\n", "g.trace:1: total steps '0'");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t1e308\t5\t1\n",
               "g.trace:1: total steps '1e308': not a whole number from 1 to 1e12");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t2e10\t1\n",
               "g.trace:1: arrival '2e10': not a number of seconds from 0 to 1e10");
    expect_bad(F, "g.trace", "A3C\tc\ta\t2\t10\t5\t1\n", "needs-data-dir");
    expect_bad(F, "g.trace", "A3C\tc\ta\t0\t10\t5\t0\n", "g.trace:1: scale factor '0'");
    expect_bad(F, "g.trace", "A3C\x08\tc\ta\t0\t10\t5\t1\n",
               "g.trace:1: 1 unknown job type: 'A3C\\x08' (line 1, 1 job)");
}

/* ---- Alibaba ---- */

#define ALI_HDR                                                                                   \
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"           \
    "deletion_time,scheduled_time\n"

static void test_alibaba_good(void **state)
{
    (void)state;
    struct sim_trace_opts o = {.gpu_mem_mib = 10000};
    const char *text = ALI_HDR "p0,1,1,1,500,,LS,Running,100,400,150\n"
                               "p1,1,1,0,0,,LS,Running,90,400,90\n"        /* no GPU */
                               "p2,1,1,2,1000,,LS,Running,50,300,60\n"     /* earlier: sorted */
                               "p3,1,1,1,20,T4,BE,Pending,120,500,\n"      /* never scheduled */
                               "p4,1,1,1,1000,V100M16,LS,Failed,100,101,100\n";
    struct sim_trace t;
    struct carma_err err;
    if (sim_trace_parse("a.csv", text, strlen(text), SIM_TRACE_AUTO, &o, &t, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(t.njobs, 3);
    assert_int_equal(t.skipped_nogpu, 1);
    assert_int_equal(t.skipped_unscheduled, 1);
    assert_int_equal(t.gpu_spec_jobs, 1); /* p4's V100M16; p3 is not replayed */
    assert_float_equal(t.jobs[0].submit_s, 0, 0); /* p2 at 50 */
    assert_int_equal(t.jobs[0].gpus, 2);
    assert_float_equal(t.jobs[0].duration_s, 240, 0);
    assert_float_equal(t.jobs[1].submit_s, 50, 0); /* p0 before p4: file order on ties */
    assert_float_equal(t.jobs[1].mem_mib, 5000, 0.01);
    assert_float_equal(t.jobs[1].smact, 0.5, 1e-6);
    assert_float_equal(t.jobs[2].smact, 0.9, 1e-6); /* clamped to the rule's range */
    assert_float_equal(t.jobs[2].duration_s, 1, 0);
    /* Messages name a job by its pod's name (its workload is named after its shape). */
    assert_string_equal(sim_trace_job_name(&t, 0), "p2");
    assert_string_equal(sim_trace_job_name(&t, 1), "p0");
    assert_string_equal(sim_trace_job_name(&t, 2), "p4");
    const struct sim_gpu_kind *one[1] = {sim_gpu_kind_find("a100-40gb")};
    assert_int_not_equal(sim_trace_check(&t, &(struct sim_config){.kinds = one, .ngpus = 1},
                                         "a.csv", &err),
                         0);
    assert_string_equal(err.msg, "a.csv:4: job p2 needs 2 GPUs but the run has 1");
    sim_trace_free(&t);
    /* Default GPU memory. */
    o.gpu_mem_mib = 0;
    assert_int_equal(sim_trace_parse("a.csv", text, strlen(text), SIM_TRACE_AUTO, &o, &t, &err), 0);
    assert_float_equal(t.jobs[1].mem_mib, SIM_TRACE_DEFAULT_GPU_MIB / 2, 0.01);
    sim_trace_free(&t);
}

static void test_alibaba_bad(void **state)
{
    (void)state;
    const enum sim_trace_format F = SIM_TRACE_ALIBABA;
    expect_bad(SIM_TRACE_AUTO, "mac.csv", "submit_s,workload\r0,resnet50-b64\r",
               "mac.csv:1: " CARMA_CR_ONLY_MSG);
    /* The multigpu* lists have no times at all: named as such. */
    expect_bad(SIM_TRACE_AUTO, "a.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1000\n",
               "a.csv:1: this Alibaba pod list has no creation_time, scheduled_time or "
               "deletion_time column (as the multigpu* lists of cluster-trace-gpu-v2023), so it "
               "cannot be replayed in time");
    expect_bad(F, "a.csv", "name,num_gpu,gpu_milli,deletion_time,scheduled_time\np,1,10,2,1\n",
               "a.csv:1: missing column 'creation_time'");
    expect_bad(F, "a.csv", "name,num_gpu,gpu_milli,creation_time,scheduled_time\np,1,10,2,1\n",
               "a.csv:1: missing column 'deletion_time'");
    expect_bad(F, "a.csv", "name,num_gpu,gpu_milli,creation_time,deletion_time\np,1,10,2,1\n",
               "a.csv:1: missing column 'scheduled_time'");
    expect_bad(F, "a.csv", "num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n",
               "a.csv:1: missing column 'name'");
    expect_bad(F, "a.csv", "name,num_gpu,num_gpu,gpu_milli,creation_time,deletion_time,"
               "scheduled_time\np,0,1,1000,1,2,1\n", "a.csv:1: column 'num_gpu' given twice");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,1000,,LS,Running,-1,400,150\n",
               "a.csv:2: creation_time '-1'");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,1000,,LS,Running,1,400,400\n",
               "a.csv:2: deletion_time 400 not after");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,1000,,LS,Running,200,400,150\n",
               "a.csv:2: scheduled_time 150 before creation_time 200");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,1001,,LS,Running,1,400,2\n", "gpu_milli '1001'");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,0,,LS,Running,1,400,2\n",
               "a.csv:2: asks for 1 GPU with gpu_milli 0");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,2,0,,LS,Running,1,400,2\n",
               "a.csv:2: asks for 2 GPUs with gpu_milli 0");
    expect_bad(F, "a.csv", ALI_HDR "p\n", "a.csv:2: 1 field, the header has 11");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,x,1,,LS,Running,1,400,2\n", "num_gpu 'x'");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,10,,LS,Running,1,,2\n",
               "a.csv:2: deletion_time '': not a whole number of seconds from 0 to 1e10");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,10,,LS,Running,1e308,5,2\n",
               "a.csv:2: creation_time '1e308': not a whole number of seconds from 0 to 1e10");
    expect_bad(F, "a.csv", ALI_HDR "p,1,1,1,10,,LS,Running,1,99999999999,99999999999\n",
               "a.csv:2: scheduled_time '99999999999': not a whole number of seconds from 0");
}

/* ---- CARMA .sh + .rad ---- */

static char tmpdir[256];

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static const char rad_a[] = "# comment\nconda activate tf\npython a.py --batch_size 32\n"
                            "a.model\ncifar\n32\nexclusive\n1\n900\n1000.5\n40000\n8000\n";

static int setup_sh(void **state)
{
    setup_cat(state);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/carma-test-trace-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    write_file(tmpdir, "a.rad", rad_a);
    write_file(tmpdir, "b.rad", "#\n\npython b.py\nb.model\nimagenet\n64\nexclusive\n2\n21000\n");
    write_file(tmpdir, "bad.rad", "#\n\npython b.py\nb.model\nimagenet\n64\nexclusive\nx\n21000\n");
    return 0;
}

static int teardown_sh(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    (void)!system(cmd);
    return teardown_cat(state);
}

static void test_rad_parse(void **state)
{
    (void)state;
    struct sim_workload w;
    struct carma_err err;
    assert_int_equal(sim_rad_parse("a.rad", "a", rad_a, strlen(rad_a), &w, &err), 0);
    assert_string_equal(w.name, "a");
    assert_int_equal(w.batch, 32);
    assert_int_equal(w.gpus, 1);
    assert_float_equal(w.mem_mib, 900, 0);
    assert_float_equal(w.est_mib[SIM_EST_HORUS], 1000.5, 1e-3);
    assert_float_equal(w.est_mib[SIM_EST_FAKETENSOR], 40000, 0);
    assert_float_equal(w.est_mib[SIM_EST_GPUMEMNET], 8000, 0);
    /* Empty lines after the last value (an editor's extra line end) end the file. */
    static const char *const trailing[] = {
        "#\nx\npython\nm\nd\n32\nexclusive\n1\n900\n\n",
        "#\nx\npython\nm\nd\n32\nexclusive\n1\n900\n1000.5\n \r\n\n\n\n",
    };
    for (size_t i = 0; i < sizeof trailing / sizeof trailing[0]; i++) {
        if (sim_rad_parse("a.rad", "a", trailing[i], strlen(trailing[i]), &w, &err))
            fail_msg("trailing case %zu: %s", i, err.msg);
        assert_float_equal(w.mem_mib, 900, 0);
        assert_float_equal(w.est_mib[SIM_EST_HORUS], i ? 1000.5 : 0, 1e-3);
        assert_float_equal(w.est_mib[SIM_EST_FAKETENSOR], 0, 0);
    }
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n9\n\n5\n",
         "a.rad:10: Horus estimate MiB '': not a number from 0 to 1e7"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n9\n1\n\n\n\n7\n", "a.rad:14: more than 12 lines"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n", "a.rad:8: 8 lines"},
        {"#\nx\npython\nm\nd\n3x\nexclusive\n1\n900\n", "a.rad:6: batch size '3x'"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n0\n900\n", "a.rad:8: GPUs '0'"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n-1\n", "a.rad:9: measured peak MiB '-1'"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n99999999\n",
         "a.rad:9: measured peak MiB '99999999': not a number above 0 and at most 1e7"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n9\n2e7\n",
         "a.rad:10: Horus estimate MiB '2e7': not a number from 0 to 1e7"},
        {"#\nx\npython\nm\nd\n2e9\nexclusive\n1\n9\n",
         "a.rad:6: batch size '2e9': not a whole number from 1 to 1e9"},
        {"#\nx\npython\nm\nd\n32\nexclusive\n1\n9\nq\n", "a.rad:10: Horus estimate MiB 'q'"},
        {"#\nx\n\nm\nd\n32\nexclusive\n1\n9\n", "a.rad:3: no command"},
        {"#\nx\npy\nm\nd\n32\ne\n1\n9\n1\n1\n1\nextra\n", "a.rad:13: more than 12 lines"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = sim_rad_parse("a.rad", "a", bad[i].text, strlen(bad[i].text), &w, &err);
        if (rc == 0 || !strstr(err.msg, bad[i].want))
            fail_msg("case %zu: rc %d '%s', wanted '%s'", i, rc, err.msg, bad[i].want);
    }
}

static void test_carma_sh(void **state)
{
    (void)state;
    const char *sh = "#!/bin/sh\nsleep 0\npython /x/src/submit.py --task /x/workloads/a.rad\n"
                     "sleep 10\n\npython3 /y/submit.py --task b.rad\nsleep 2.5\n"
                     "python /x/src/submit.py --task /z/a.rad\n";
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat, .aux_dir = tmpdir};
    struct sim_trace t;
    struct carma_err err;
    if (sim_trace_parse("t.sh", sh, strlen(sh), SIM_TRACE_AUTO, &o, &t, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(t.njobs, 3);
    assert_int_equal(t.nworkloads, 2);
    assert_float_equal(t.jobs[1].submit_s, 10, 0);
    assert_float_equal(t.jobs[2].submit_s, 12.5, 0);
    assert_float_equal(t.jobs[0].mem_mib, 900, 0);    /* from the .rad */
    assert_float_equal(t.jobs[0].duration_s, 600, 0); /* from the catalog */
    assert_float_equal(t.jobs[0].smact, 0.5, 1e-6);
    assert_float_equal(t.jobs[0].est_mib[SIM_EST_FAKETENSOR], 40000, 0);
    assert_int_equal(t.jobs[1].gpus, 2);
    assert_int_equal(t.jobs[0].workload, t.jobs[2].workload);
    sim_trace_free(&t);

    /* The trace's own folder is the default place of the .rad files. */
    char path[512];
    snprintf(path, sizeof path, "%s/t.sh", tmpdir);
    write_file(tmpdir, "t.sh", "sleep 1\npython s/submit.py --task a.rad\n");
    o.aux_dir = NULL;
    assert_int_equal(sim_trace_load_opts(path, SIM_TRACE_AUTO, &o, &t, &err), 0);
    assert_int_equal(t.njobs, 1);
    assert_float_equal(t.jobs[0].submit_s, 1, 0);
    sim_trace_free(&t);
}

static void sh_bad(const char *sh, const char *want)
{
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat, .aux_dir = tmpdir};
    struct sim_trace t;
    memset(&t, 0, sizeof t);
    struct carma_err err;
    int rc = sim_trace_parse("t.sh", sh, strlen(sh), SIM_TRACE_CARMA_SH, &o, &t, &err);
    if (rc == 0 || !strstr(err.msg, want))
        fail_msg("rc %d '%s', wanted '%s'", rc, err.msg, want);
    assert_null(t.jobs);
}

static void test_carma_sh_bad(void **state)
{
    (void)state;
    sh_bad("sleep 1\npython s/submit.py --task zzz.rad\n", "t.sh:2: task 'zzz': not in the");
    sh_bad("sleep -1\n", "t.sh:1: sleep '-1'");
    sh_bad("sleep 1e10\n", "t.sh:1: sleep '1e10': not a number of seconds from 0 to 1e9");
    sh_bad("sleep\n", "t.sh:1: expected 'sleep SECONDS'");
    sh_bad("sleep 1\x1b\n", "t.sh:1: sleep '1\\x1B'");
    sh_bad("rm -rf /\n", "t.sh:1: expected");
    sh_bad("python s/submit.py --task a.rad --gpus 2\n", "t.sh:1: expected");
    sh_bad("python s/submit.py --task .rad\n", "t.sh:1: task file name empty");
    /* A catalog entry whose .rad file is missing or broken. */
    static const char cat2[] = CAT_HDR "nofile,m,1,1,100,1,0.5,0.2,0.2,30,\n"
                                       "bad,m,1,1,100,1,0.5,0.2,0.2,30,\n";
    struct sim_workload *c2;
    size_t n2;
    struct carma_err err;
    assert_int_equal(sim_catalog_parse("c2", cat2, strlen(cat2), &c2, &n2, &err), 0);
    struct sim_workload *keep = cat;
    size_t nkeep = ncat;
    cat = c2;
    ncat = n2;
    sh_bad("python s/submit.py --task nofile.rad\n", "t.sh:1: task 'nofile':");
    sh_bad("sleep 3\npython s/submit.py --task bad.rad\n", "bad.rad:8: GPUs 'x'");
    cat = keep;
    ncat = nkeep;
    free(c2);
}

/* ---- bundled data ---- */

static void load_count(const char *path, enum sim_trace_format fmt, size_t want)
{
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
    struct sim_trace t;
    struct carma_err err;
    if (sim_trace_load_opts(path, fmt, &o, &t, &err))
        fail_msg("%s", err.msg);
    if (t.njobs != want)
        fail_msg("%s: %zu jobs, expected %zu", path, t.njobs, want);
    for (size_t i = 1; i < t.njobs; i++)
        assert_true(t.jobs[i].submit_s >= t.jobs[i - 1].submit_s);
    sim_trace_free(&t);
}

static int setup_data(void **state)
{
    (void)state;
    char *buf;
    size_t len;
    struct carma_err err;
    if (carma_file_read("data/workloads.csv", 1 << 20, &buf, &len, &err)) {
        fprintf(stderr, "%s (run from the repository root)\n", err.msg);
        return -1;
    }
    int rc = sim_catalog_parse("data/workloads.csv", buf, len, &cat, &ncat, &err);
    free(buf);
    return rc;
}

static void test_data_carma(void **state)
{
    (void)state;
    assert_int_equal(ncat, 51);
    for (size_t i = 0; i < ncat; i++) {
        float want = strcmp(cat[i].name, "dlrm") == 0
                         ? 0.05f
                         : sim_profile_smact(cat[i].mem_mib, SIM_PROFILE_CARMA_FLOOR_MIB);
        assert_float_equal(cat[i].smact, want, 0.0006);
        assert_float_equal(cat[i].smocc, sim_profile_smocc(cat[i].smact), 0.0006);
        assert_float_equal(cat[i].ramp_s, SIM_PROFILE_RAMP_S, 0);
    }
    /* carma's bound (est_carma_mib, `carma eval-estimator --catalog`) for the 39 workloads
     * whose model has a summary in data/estimator, never below the peak CARMA measured
     * (an est-* policy would crash the job on it); empty for the 12 others. */
    size_t given = 0;
    for (size_t i = 0; i < ncat; i++) {
        float b = cat[i].est_mib[SIM_EST_CARMA];
        if (b > 0) {
            given++;
            if (b < cat[i].mem_mib)
                fail_msg("%s: carma's bound %.0f below the peak %.0f", cat[i].name, (double)b,
                         (double)cat[i].mem_mib);
        }
    }
    assert_int_equal(given, 39);
    load_count("data/trace-mix90.csv", SIM_TRACE_AUTO, 90);
    load_count("data/trace-t1.csv", SIM_TRACE_AUTO, 60);
}

/* trace-t1.csv restated as CARMA's .sh + .rad files gives the same jobs. */
static void test_data_sh_equivalent(void **state)
{
    (void)state;
    char dir[] = "/tmp/carma-test-sh-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < ncat; i++) {
        char rad[512], name[128];
        const struct sim_workload *w = &cat[i];
        snprintf(rad, sizeof rad, "# c\nconda activate tf\npython x.py\nm\nd\n%u\nexclusive\n%u\n"
                 "%.0f\n%g\n%g\n%g\n", w->batch ? w->batch : 1, w->gpus, (double)w->mem_mib,
                 (double)w->est_mib[0], (double)w->est_mib[1], (double)w->est_mib[2]);
        snprintf(name, sizeof name, "%s.rad", w->name);
        write_file(dir, name, rad);
    }
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat, .aux_dir = dir};
    struct sim_trace csv, sh;
    struct carma_err err;
    assert_int_equal(sim_trace_load_opts("data/trace-t1.csv", SIM_TRACE_AUTO, &o, &csv, &err), 0);
    size_t cap = 64 * 1024, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    double prev = 0;
    for (size_t i = 0; i < csv.njobs; i++) {
        len += (size_t)snprintf(text + len, cap - len,
                                "sleep %.0f\npython /home/u/src/submit.py --task "
                                "/home/u/workloads/%s.rad\n",
                                csv.jobs[i].submit_s - prev,
                                csv.workloads[csv.jobs[i].workload].name);
        prev = csv.jobs[i].submit_s;
    }
    if (sim_trace_parse("t1.sh", text, len, SIM_TRACE_AUTO, &o, &sh, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(sh.njobs, csv.njobs);
    for (size_t i = 0; i < csv.njobs; i++) {
        assert_float_equal(sh.jobs[i].submit_s, csv.jobs[i].submit_s, 0);
        assert_float_equal(sh.jobs[i].duration_s, csv.jobs[i].duration_s, 0);
        assert_float_equal(sh.jobs[i].mem_mib, csv.jobs[i].mem_mib, 0);
        assert_int_equal(sh.jobs[i].gpus, csv.jobs[i].gpus);
        assert_float_equal(sh.jobs[i].smact, csv.jobs[i].smact, 0);
    }
    free(text);
    sim_trace_free(&csv);
    sim_trace_free(&sh);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
}

static void test_data_muri(void **state)
{
    (void)state;
    load_count("data/traces/philly-muri/trace1.csv", SIM_TRACE_AUTO, 1494);
    load_count("data/traces/philly-muri/trace2.csv", SIM_TRACE_AUTO, 5755);
    load_count("data/traces/philly-muri/trace3.csv", SIM_TRACE_AUTO, 992);
    load_count("data/traces/philly-muri/trace4.csv", SIM_TRACE_AUTO, 2638);
    struct sim_trace t;
    struct carma_err err;
    assert_int_equal(sim_trace_load("data/traces/philly-muri/trace1.csv", SIM_TRACE_MURI, NULL, 0,
                                    NULL, &t, &err),
                     0);
    double sum = 0;
    for (size_t i = 0; i < t.njobs; i++)
        sum += t.jobs[i].duration_s;
    assert_float_equal(sum / (double)t.njobs, 250.45, 0.01); /* data/README.md: mean 250 s */
    assert_float_equal(t.jobs[t.njobs - 1].submit_s / 3600, 3.0, 0.1);
    sim_trace_free(&t);
}

static void test_data_gavel(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        size_t n;
    } g[] = {{"0e4a51", 1181}, {"103959", 986}, {"11cb48", 2000}, {"23dbec", 9},
             {"2869ce", 533},  {"51b7ef", 18},  {"6214e9", 2000}, {"6c71a0", 2000},
             {"795a4c", 3},    {"7f04ca", 972}, {"925e2b", 4},    {"b436b2", 2000},
             {"e13805", 607},  {"ed69ec", 951}, {"ee9e8c", 2000}};
    size_t total = 0;
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "data/traces/philly-gavel/%s.trace", g[i].file);
        load_count(path, SIM_TRACE_AUTO, g[i].n);
        total += g[i].n;
    }
    assert_int_equal(total, 15264);
}

static void test_data_alibaba(void **state)
{
    (void)state;
    static const char *const f[] = {"default", "gpushare40", "gpushare100"};
    static const size_t pending[] = {897, 981, 1209};
    for (int i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, "data/traces/alibaba-v2023/openb_pod_list_%s.csv", f[i]);
        struct sim_trace t;
        struct carma_err err;
        if (sim_trace_load_opts(path, SIM_TRACE_AUTO, NULL, &t, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(t.skipped_nogpu, 1088);
        /* Pending pods without a GPU were counted as "no GPU" first. */
        assert_true(t.skipped_unscheduled <= pending[i]);
        assert_int_equal(t.njobs + t.skipped_nogpu + t.skipped_unscheduled, 8152);
        for (size_t k = 1; k < t.njobs; k++)
            assert_true(t.jobs[k].submit_s >= t.jobs[k - 1].submit_s);
        sim_trace_free(&t);
    }
    /* The multigpu50 list has no times at all: refused, saying so. */
    struct sim_trace t;
    struct carma_err err;
    assert_int_not_equal(sim_trace_load_opts("data/traces/alibaba-v2023/"
                                             "openb_pod_list_multigpu50.csv",
                                             SIM_TRACE_AUTO, NULL, &t, &err),
                         0);
    assert_non_null(strstr(err.msg, "multigpu50.csv:1: this Alibaba pod list has no "
                                    "creation_time, scheduled_time or deletion_time column"));
    /* The bundled lists' GPU pods name no GPU model. */
    for (int i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, "data/traces/alibaba-v2023/openb_pod_list_%s.csv", f[i]);
        assert_int_equal(sim_trace_load_opts(path, SIM_TRACE_AUTO, NULL, &t, &err), 0);
        assert_int_equal(t.gpu_spec_jobs, 0);
        sim_trace_free(&t);
    }
}

/* data/model-profiles.csv and the built-in table are the same rows. */
static void test_model_profiles_match(void **state)
{
    (void)state;
    char *buf;
    size_t len;
    struct carma_err err;
    assert_int_equal(carma_file_read("data/model-profiles.csv", 1 << 20, &buf, &len, &err), 0);
    static struct carma_csv c;
    carma_csv_init(&c, buf, len, "model-profiles.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    size_t n, rows = 0;
    const struct sim_model_profile *p = sim_model_profiles(&n);
    while (carma_csv_next(&c, &err) == 1) {
        assert_true(rows < n);
        assert_int_equal(c.nfields, 5);
        assert_string_equal(c.field[0], p[rows].name);
        assert_float_equal(atof(c.field[1]), p[rows].base_mib, 1e-9);
        assert_float_equal(atof(c.field[2]), p[rows].per_sample_mib, 1e-9);
        assert_float_equal(atof(c.field[3]), p[rows].steps_per_s, 1e-9);
        assert_string_equal(c.field[4], p[rows].source);
        rows++;
    }
    assert_int_equal(rows, n);
    free(buf);
    /* Every model name of the bundled Muri and Gavel traces has a profile. */
    static const char *const names[] = {"vgg16", "vgg19", "gpt2", "bert", "resnet18",
                                        "shufflenet_v2_x1_0", "dqn", "a2c", "A3C", "CycleGAN"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_non_null(sim_model_profile_find(names[i]));
}

/* docs/traces.md lists every name of the built-in table, the Gavel job types (those
 * with a throughput) apart from the Muri-only names, and no other: unknown-name errors
 * send users there. */
static void test_model_names_documented(void **state)
{
    (void)state;
    char *doc;
    size_t len;
    struct carma_err err;
    assert_int_equal(carma_file_read("docs/traces.md", 1 << 20, &doc, &len, &err), 0);
    char *muri = strstr(doc, "- Muri `model_name`");
    char *gavel = muri ? strstr(muri, "- Gavel job types") : NULL;
    char *end = gavel ? strstr(gavel, "(The unit test `test_model_names_documented`") : NULL;
    assert_non_null(end);
    *end = '\0';
    size_t n, in_muri = 0, in_gavel = 0;
    const struct sim_model_profile *p = sim_model_profiles(&n);
    for (size_t i = 0; i < n; i++) {
        char want[SIM_NAME_MAX + 2];
        snprintf(want, sizeof want, "`%s`", p[i].name);
        char *at = strstr(muri, want);
        if (!at)
            fail_msg("docs/traces.md does not list '%s'", p[i].name);
        if ((p[i].steps_per_s > 0) != (at > gavel))
            fail_msg("docs/traces.md lists '%s' in the wrong list", p[i].name);
        in_gavel += p[i].steps_per_s > 0;
        in_muri += !(p[i].steps_per_s > 0);
    }
    size_t ticks_muri = 0, ticks_gavel = 0;
    for (char *c = muri; c < gavel; c++)
        ticks_muri += *c == '`';
    for (char *c = gavel; *c; c++)
        ticks_gavel += *c == '`';
    assert_int_equal(ticks_muri, 2 * (in_muri + 1)); /* and `model_name` */
    assert_int_equal(ticks_gavel, 2 * in_gavel);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest mem[] = {
        cmocka_unit_test(test_catalog_good),   cmocka_unit_test(test_catalog_bad),
        cmocka_unit_test(test_carma_csv_good), cmocka_unit_test(test_carma_csv_bad),
        cmocka_unit_test(test_bounds),         cmocka_unit_test(test_detect),
        cmocka_unit_test(test_muri_good),      cmocka_unit_test(test_muri_bad),
        cmocka_unit_test(test_gavel_good),     cmocka_unit_test(test_gavel_bad),
        cmocka_unit_test(test_alibaba_good),   cmocka_unit_test(test_alibaba_bad),
        cmocka_unit_test(test_nul_bytes),      cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_jitter),         cmocka_unit_test(test_bare_cr),
    };
    const struct CMUnitTest sh[] = {
        cmocka_unit_test(test_rad_parse),
        cmocka_unit_test(test_carma_sh),
        cmocka_unit_test(test_carma_sh_bad),
    };
    const struct CMUnitTest data[] = {
        cmocka_unit_test(test_data_carma),   cmocka_unit_test(test_data_sh_equivalent),
        cmocka_unit_test(test_data_muri),    cmocka_unit_test(test_data_gavel),
        cmocka_unit_test(test_data_alibaba), cmocka_unit_test(test_model_profiles_match),
        cmocka_unit_test(test_model_names_documented),
    };
    int fails = cmocka_run_group_tests_name("trace_mem", mem, setup_cat, teardown_cat);
    fails += cmocka_run_group_tests_name("trace_sh", sh, setup_sh, teardown_sh);
    fails += cmocka_run_group_tests_name("trace_data", data, setup_data, teardown_cat);
    return fails ? 1 : 0;
}
