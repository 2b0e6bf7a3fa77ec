/* The strict CSV reader and number parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "util/csv.h"

static struct carma_csv c;

static void test_fields_quotes_and_blank_lines(void **state)
{
    (void)state;
    const char *in = "a,b,c\r\n\n1,\"x, \"\"y\"\"\",\n";
    struct carma_err err;
    carma_csv_init(&c, in, strlen(in), "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_int_equal(c.nfields, 3);
    assert_int_equal(carma_csv_col(&c, "c"), 2);
    assert_int_equal(carma_csv_col(&c, "d"), -1);
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_int_equal(c.line, 3); /* the blank line counts */
    assert_string_equal(c.field[1], "x, \"y\"");
    assert_string_equal(c.field[2], "");
    assert_int_equal(carma_csv_next(&c, &err), 0);
}

/* A record's line is where it starts; errors inside a later line say both. */
static void test_lines_of_multiline_records(void **state)
{
    (void)state;
    struct carma_err err;
    const char *in = "h\n\"x\ny\"\nz\n";
    carma_csv_init(&c, in, strlen(in), "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_int_equal(c.line, 2);
    assert_string_equal(c.field[0], "x\ny");
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_int_equal(c.line, 4);
    static const char nul[] = "h\n\"x\ny\0\"\n";
    carma_csv_init(&c, nul, sizeof nul - 1, "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "t.csv:3: NUL byte in text (in the record starting at line 2)");
    const char *after = "h\n\"x\ny\"z\n";
    carma_csv_init(&c, after, strlen(after), "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg,
                        "t.csv:3: text after closing quote in field 1 (in the record starting at "
                        "line 2)");
    const char *open = "h\n\n\"x\ny\n";
    carma_csv_init(&c, open, strlen(open), "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "t.csv:3: unterminated quoted field");
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    struct carma_err err;
    const char *in = "a\n\"open\n";
    carma_csv_init(&c, in, strlen(in), "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "t.csv:2: unterminated quoted field");
    const char *bom2 = CARMA_BOM CARMA_BOM "a\n";
    carma_csv_init(&c, bom2, strlen(bom2), "b.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "b.csv:1: " CARMA_BOM2_MSG);
    const char *in2 = "a\"b\n";
    carma_csv_init(&c, in2, strlen(in2), "u.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_non_null(strstr(err.msg, "u.csv:1: stray quote"));
    /* A bare CR: classic Mac line ends say so; inside quotes it is data. */
    const char *mac = "a,b\r1,2\r";
    carma_csv_init(&c, mac, strlen(mac), "m.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "m.csv:1: " CARMA_CR_ONLY_MSG);
    const char *stray = "a,b\r\n1,x\ry\n";
    carma_csv_init(&c, stray, strlen(stray), "s.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "s.csv:2: a carriage return without a line feed");
    const char *quoted = "\"x\ry\",b\n";
    carma_csv_init(&c, quoted, strlen(quoted), "q.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_string_equal(c.field[0], "x\ry");
    char big[CARMA_CSV_MAX_FIELDS * 2 + 2];
    for (size_t i = 0; i < sizeof big - 2; i += 2) {
        big[i] = '1';
        big[i + 1] = ',';
    }
    big[sizeof big - 2] = '1';
    big[sizeof big - 1] = '\n';
    carma_csv_init(&c, big, sizeof big, "w.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_non_null(strstr(err.msg, "more than"));
}

/* The documented limits (docs/traces.md): a field of 4,096 bytes and a record of 8,192
 * (fields and commas) are read, one byte more of either is refused, naming the limit. */
static void test_field_and_record_limits(void **state)
{
    (void)state;
    struct carma_err err;
    static char in[2 * CARMA_CSV_MAX_RECORD];
    /* 4096 + ',' + 4095 = 8192 bytes: both limits met exactly */
    size_t n = 0;
    memset(in, 'x', CARMA_CSV_MAX_FIELD);
    n += CARMA_CSV_MAX_FIELD;
    in[n++] = ',';
    memset(in + n, 'y', CARMA_CSV_MAX_FIELD - 1);
    n += CARMA_CSV_MAX_FIELD - 1;
    in[n++] = '\n';
    carma_csv_init(&c, in, n, "r.csv", ',');
    if (carma_csv_next(&c, &err) != 1)
        fail_msg("a record of 8192 bytes: %s", err.msg);
    assert_int_equal(c.nfields, 2);
    assert_int_equal(strlen(c.field[0]), CARMA_CSV_MAX_FIELD);
    assert_int_equal(strlen(c.field[1]), CARMA_CSV_MAX_FIELD - 1);
    /* one byte more in the second field: 8193 */
    in[n - 1] = 'y';
    in[n++] = '\n';
    carma_csv_init(&c, in, n, "r.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "r.csv:1: record longer than 8192 bytes");
    /* three fields each under the field limit, 9002 bytes in all (audit 2's case) */
    n = 0;
    for (int f = 0; f < 3; f++) {
        memset(in + n, 'z', 3000);
        n += 3000;
        in[n++] = f < 2 ? ',' : '\n';
    }
    carma_csv_init(&c, in, n, "r.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "r.csv:1: record longer than 8192 bytes");
    /* a field of 4097 bytes */
    memset(in, 'x', CARMA_CSV_MAX_FIELD + 1);
    in[CARMA_CSV_MAX_FIELD + 1] = '\n';
    carma_csv_init(&c, in, CARMA_CSV_MAX_FIELD + 2, "r.csv", ',');
    assert_true(carma_csv_next(&c, &err) < 0);
    assert_string_equal(err.msg, "r.csv:1: field 1 longer than 4096 bytes");
}

/* A header naming a column twice is ambiguous: refused, whatever the column. */
static void test_header_duplicate_column(void **state)
{
    (void)state;
    struct carma_err err;
    static const char *const names[] = {"a", "b"};
    int col[2];
    const char *dup[] = {"a,b,b\n1,2,3\n", "a,a,b\n", "a,b,x,y,x\n"};
    const char *want[] = {"d.csv:1: column 'b' given twice", "d.csv:1: column 'a' given twice",
                          "d.csv:1: column 'x' given twice"};
    for (size_t i = 0; i < 3; i++) {
        carma_csv_init(&c, dup[i], strlen(dup[i]), "d.csv", ',');
        assert_true(carma_csv_header(&c, names, 2, 2, col, NULL, &err) < 0);
        assert_string_equal(err.msg, want[i]);
    }
    /* Unnamed columns (empty names) may repeat; the name is quoted safely. */
    const char *ok = "a,,b,\n";
    carma_csv_init(&c, ok, strlen(ok), "d.csv", ',');
    assert_int_equal(carma_csv_header(&c, names, 2, 2, col, NULL, &err), 0);
    assert_int_equal(col[1], 2);
    const char *nl = "a,b,\"x\ny\",\"x\ny\"\n";
    carma_csv_init(&c, nl, strlen(nl), "d.csv", ',');
    assert_true(carma_csv_header(&c, names, 2, 2, col, NULL, &err) < 0);
    assert_string_equal(err.msg, "d.csv:1: column 'x\\ny' given twice");
}

/* Values quoted in messages show control bytes and broken UTF-8 as escapes. */
static void test_quote(void **state)
{
    (void)state;
    assert_string_equal(carma_quote("plain", 40).s, "plain");
    assert_string_equal(carma_quote("a\nb\r\t\\c\x01\x7f", 40).s, "a\\nb\\r\\t\\\\c\\x01\\x7F");
    assert_string_equal(carma_quote("caf\xc3\xa9 \xff\xc2\x85", 40).s,
                        "caf\xc3\xa9 \\xFF\\xC2\\x85");
    assert_string_equal(carma_quote("abcdef", 3).s, "abc...");
    assert_string_equal(carma_quote("ab\xc3\xa9", 3).s, "ab..."); /* no half character */
    assert_string_equal(carma_quote(NULL, 3).s, "");
    /* a byte order mark out of place is invisible: shown as \uFEFF */
    assert_string_equal(carma_quote("\xef\xbb\xbf" "0", 40).s, "\\uFEFF0");
    char big[200];
    memset(big, '\n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(strlen(carma_quote(big, 1000).s), CARMA_QUOTE_MAX * 2 + 3);
}

static void test_numbers_strict(void **state)
{
    (void)state;
    double d;
    uint64_t u;
    int64_t i;
    assert_int_equal(carma_parse_double("1.5e3", &d), 0);
    assert_float_equal(d, 1500, 0);
    assert_int_not_equal(carma_parse_double("1.5x", &d), 0);
    assert_int_not_equal(carma_parse_double(" 1", &d), 0);
    assert_int_not_equal(carma_parse_double("0x10", &d), 0);
    assert_int_not_equal(carma_parse_double("nan", &d), 0);
    assert_int_not_equal(carma_parse_double("inf", &d), 0);
    assert_int_not_equal(carma_parse_double("", &d), 0);
    /* Underflow reads as the nearest double (strtod's ERANGE); overflow is refused. */
    assert_int_equal(carma_parse_double("4.9e-324", &d), 0);
    assert_true(d > 0 && d < 1e-320);
    assert_int_equal(carma_parse_double("1e-400", &d), 0);
    assert_true(d == 0);
    assert_int_not_equal(carma_parse_double("1e400", &d), 0);
    assert_int_not_equal(carma_parse_double("-1e400", &d), 0);
    assert_int_equal(carma_parse_u64("42", &u), 0);
    assert_int_not_equal(carma_parse_u64("-1", &u), 0);
    assert_int_not_equal(carma_parse_u64("18446744073709551616", &u), 0);
    assert_int_equal(carma_parse_i64("-7", &i), 0);
    assert_int_equal(i, -7);
    assert_int_not_equal(carma_parse_i64("7 ", &i), 0);
}

/* What is not text at all is named as such; a text with a stray NUL is not. */
static void test_not_text(void **state)
{
    (void)state;
    static const char gz[] = "\x1f\x8b\x08\x08\x00\x00\x00\x00\x00\x03t1.csv";
    assert_string_equal(carma_text_not_text(gz, sizeof gz - 1),
                        "looks compressed (gzip): decompress it first");
    static const char xz[] = "\xfd" "7zXZ\0\0\x04";
    assert_string_equal(carma_text_not_text(xz, sizeof xz - 1),
                        "looks compressed (xz): decompress it first");
    static const char bz[] = "BZh91AY&SY\x01";
    assert_string_equal(carma_text_not_text(bz, sizeof bz - 1),
                        "looks compressed (bzip2): decompress it first");
    assert_null(carma_text_not_text("BZh,x\n", 6)); /* a text that starts so */
    char bin[512];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (char)(i * 37 % 251);
    assert_string_equal(carma_text_not_text(bin, sizeof bin), "binary file, not text");
    static const char nul[] = "\0submit_s,workload\n0,vgg\n";
    assert_null(carma_text_not_text(nul, sizeof nul - 1));
    static const char utf8[] = "caf\xc3\xa9,\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\0\n";
    assert_null(carma_text_not_text(utf8, sizeof utf8 - 1));
    assert_null(carma_text_not_text("", 0));
}

static void test_file_read_bounds(void **state)
{
    (void)state;
    char path[] = "/tmp/carma-csv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char buf[200000];
    memset(buf, 'a', sizeof buf);
    assert_int_equal(write(fd, buf, sizeof buf), (int)sizeof buf);
    close(fd);
    char *out;
    size_t len;
    struct carma_err err;
    assert_int_equal(carma_file_read(path, 1u << 20, &out, &len, &err), 0);
    assert_int_equal(len, sizeof buf);
    assert_int_equal(out[len], '\0');
    free(out);
    /* exactly max bytes is within the bound, at any max */
    assert_int_equal(carma_file_read(path, 200000, &out, &len, &err), 0);
    assert_int_equal(len, 200000);
    free(out);
    assert_true(carma_file_read(path, 100000, &out, &len, &err) < 0);
    /* Refused from its size, unread: the message states the size. */
    assert_non_null(strstr(err.msg, ": 200000 bytes, larger than 100000 bytes"));
    /* A pipe's size is unknown: bounded while reading. */
    assert_true(carma_file_read("/dev/zero", 100000, &out, &len, &err) < 0);
    assert_string_equal(err.msg, "/dev/zero: larger than 100000 bytes");
    unlink(path);
    assert_true(carma_file_read(path, 100, &out, &len, &err) < 0);
    assert_non_null(strstr(err.msg, path));
    /* An open stream (standard input), named as the caller says. */
    FILE *f = fopen("/dev/zero", "rb");
    assert_non_null(f);
    assert_true(carma_stream_read(f, "<stdin>", 1000, &out, &len, &err) < 0);
    assert_string_equal(err.msg, "<stdin>: larger than 1000 bytes");
    fclose(f);
    f = tmpfile();
    assert_non_null(f);
    fputs("a,b\n", f);
    rewind(f);
    assert_int_equal(carma_stream_read(f, "<stdin>", 1000, &out, &len, &err), 0);
    assert_int_equal(len, 4);
    assert_string_equal(out, "a,b\n");
    free(out);
    fclose(f);
}

/* carma_csv_put writes what carma_csv_next reads back as the same field. */
static void test_put_round_trip(void **state)
{
    (void)state;
    static const char *const fields[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "cr\rx", ""};
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    assert_non_null(o);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (i)
            fputc(',', o);
        carma_csv_put(o, fields[i]);
    }
    fputc('\n', o);
    assert_int_equal(fclose(o), 0);
    assert_string_equal(buf, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\rx\",\n");
    struct carma_err err;
    carma_csv_init(&c, buf, len, "t.csv", ',');
    assert_int_equal(carma_csv_next(&c, &err), 1);
    assert_int_equal(c.nfields, sizeof fields / sizeof fields[0]);
    for (size_t i = 0; i < c.nfields; i++)
        assert_string_equal(c.field[i], fields[i]);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_quotes_and_blank_lines),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_field_and_record_limits),
        cmocka_unit_test(test_lines_of_multiline_records),
        cmocka_unit_test(test_header_duplicate_column),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_numbers_strict),
        cmocka_unit_test(test_not_text),
        cmocka_unit_test(test_file_read_bounds),
        cmocka_unit_test(test_put_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
