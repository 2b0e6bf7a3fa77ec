/* STATE/drained's lines (daemon/drained.h): what carma drain and undrain change in them,
 * and the reason of an administrator's drain, always a line the file keeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/drained.h"

static void test_add_remove(void **state)
{
    (void)state;
    struct carmad_drained e[3];
    size_t n = 0;
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-a", "reported Xid 48 (x)"), 1);
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-b", "drained by root"), 1);
    /* a GPU named already keeps its first reason */
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-a", "drained by root"), 0);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].reason, "reported Xid 48 (x)");
    /* nothing the file would not read back */
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-c", "a\tb"), -EINVAL);
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-c", ""), -EINVAL);
    assert_int_equal(carmad_drained_add(e, &n, 3, "", "x"), -EINVAL);
    char longr[CARMAD_DRAINED_REASON + 1];
    memset(longr, 'r', sizeof longr - 1);
    longr[sizeof longr - 1] = '\0';
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-c", longr), -EINVAL);
    longr[CARMAD_DRAINED_REASON - 1] = '\0'; /* the longest kept */
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-c", longr), 1);
    assert_int_equal(carmad_drained_add(e, &n, 3, "GPU-d", "x"), -ENOSPC);
    assert_int_equal(n, 3);
    /* removed: the others keep their order */
    assert_int_equal(carmad_drained_remove(e, &n, "GPU-b"), 1);
    assert_int_equal(carmad_drained_remove(e, &n, "GPU-b"), 0);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].uuid, "GPU-a");
    assert_string_equal(e[1].uuid, "GPU-c");
    /* and the text reads back the same */
    static char text[CARMAD_DRAINED_FILE_MAX];
    size_t len = carmad_drained_format(e, n, text, sizeof text);
    assert_true(len > 0);
    struct carmad_drained b[3];
    size_t nb = 0;
    assert_int_equal(carmad_drained_parse(text, len, b, 3, &nb, NULL, NULL), 0);
    assert_int_equal(nb, 2);
    assert_string_equal(b[1].reason, longr);
    assert_int_equal(carmad_drained_remove(e, &n, "GPU-a"), 1);
    assert_int_equal(carmad_drained_remove(e, &n, "GPU-c"), 1);
    assert_int_equal(n, 0);
}

/* A file an editor saved with CR LF line ends keeps its GPUs drained: the reason is read
 * without the CR (ignoring the lines would put GPUs that need a reset back in service). */
static void test_parse_crlf(void **state)
{
    (void)state;
    static const char text[] = "GPU-a\treported Xid 48 (x)\r\n\r\nGPU-b\tdrained by root\r\n";
    struct carmad_drained b[3];
    size_t nb = 0;
    assert_int_equal(carmad_drained_parse(text, sizeof text - 1, b, 3, &nb, NULL, NULL), 0);
    assert_int_equal(nb, 2);
    assert_string_equal(b[0].uuid, "GPU-a");
    assert_string_equal(b[0].reason, "reported Xid 48 (x)");
    assert_string_equal(b[1].reason, "drained by root");
    /* a CR elsewhere is still no printable ASCII */
    static const char mid[] = "GPU-c\tx\ry\n";
    assert_int_equal(carmad_drained_parse(mid, sizeof mid - 1, b, 3, &nb, NULL, NULL), 1);
    assert_int_equal(nb, 0);
}

/* The most lines of the longest fit the format's buffer and the bytes read back. */
static void test_file_max(void **state)
{
    (void)state;
    static struct carmad_drained e[CARMAD_DRAINED_MAX], b[CARMAD_DRAINED_MAX];
    static char text[CARMAD_DRAINED_FILE_MAX];
    for (size_t k = 0; k < CARMAD_DRAINED_MAX; k++) {
        memset(e[k].uuid, 'u', sizeof e[k].uuid - 1);
        e[k].uuid[sizeof e[k].uuid - 1] = '\0';
        snprintf(e[k].uuid, 8, "%07zu", k); /* distinct */
        e[k].uuid[7] = 'u';
        memset(e[k].reason, 'r', sizeof e[k].reason - 1);
        e[k].reason[sizeof e[k].reason - 1] = '\0';
    }
    size_t len = carmad_drained_format(e, CARMAD_DRAINED_MAX, text, sizeof text);
    assert_int_equal(len, CARMAD_DRAINED_FILE_MAX - 1);
    size_t nb = 0;
    assert_int_equal(carmad_drained_parse(text, len, b, CARMAD_DRAINED_MAX, &nb, NULL, NULL), 0);
    assert_int_equal(nb, CARMAD_DRAINED_MAX);
}

static void test_manual_reason(void **state)
{
    (void)state;
    char r[CARMAD_DRAINED_REASON];
    assert_int_equal(carmad_drained_manual_reason(r, sizeof r, "alice", 1714557600.7, NULL),
                     strlen("drained by alice at 2024-05-01T10:00:00Z"));
    assert_string_equal(r, "drained by alice at 2024-05-01T10:00:00Z");
    carmad_drained_manual_reason(r, sizeof r, "root", 0, "fan swap");
    assert_string_equal(r, "drained by root at 1970-01-01T00:00:00Z: fan swap");
    /* a user name that is not printable ASCII, cut; the longest text: still a line kept */
    char text[101];
    memset(text, 'x', 100);
    text[100] = '\0';
    carmad_drained_manual_reason(
        r, sizeof r, "b\xc3\xa9\tb-a-very-long-user-name-that-goes-on-and-on", 1e9, text);
    static const char head[] =
        "drained by b???b-a-very-long-user-name-that at 2001-09-09T01:46:40Z: ";
    assert_memory_equal(r, head, sizeof head - 1);
    assert_string_equal(r + sizeof head - 1, text);
    struct carmad_drained e[1];
    size_t n = 0;
    assert_int_equal(carmad_drained_add(e, &n, 1, "GPU-a", r), 1);
    /* cut to the buffer, never past it */
    char small[24];
    assert_int_equal(carmad_drained_manual_reason(small, sizeof small, "root", 0, "x"), 23);
    assert_string_equal(small, "drained by root at 1970");
    assert_int_equal(carmad_drained_manual_reason(r, sizeof r, "", -5, NULL),
                     strlen("drained by ? at 1970-01-01T00:00:00Z"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_remove),
        cmocka_unit_test(test_parse_crlf),
        cmocka_unit_test(test_file_max),
        cmocka_unit_test(test_manual_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
