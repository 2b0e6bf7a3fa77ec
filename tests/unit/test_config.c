/* carmad's INI file: numbers are decimal and nothing else (a hex, signed or spaced value
 * is refused with its file and line, as every other malformed value is). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config.h"

/* Loads `text` as an INI file over the defaults: 0, or -1 with err set. */
static int load(const char *text, struct carmad_config *c, struct carma_err *err)
{
    int fd = memfd_create("test_config", 0);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    carmad_config_default(c);
    int rc = carmad_config_load(c, path, err);
    close(fd);
    return rc < 0 ? -1 : 0;
}

static void test_numbers_are_decimal(void **state)
{
    (void)state;
    static struct carmad_config c;
    struct carma_err err = {{0}};
    assert_int_equal(load("[daemon]\nkill_grace = 16\nmonitor_interval = 0.5\n"
                          "max_conns_per_user = 12\nsocket_mode = 0660\n",
                          &c, &err),
                     0);
    assert_true(c.kill_grace_s == 16 && c.monitor_interval_s == 0.5);
    assert_int_equal(c.max_conns_per_user, 12);
    assert_int_equal(c.socket_mode, 0660);
    static const char *const bad[] = {
        "[daemon]\nkill_grace = 0x10\n",        "[daemon]\nmonitor_interval = 0x1p-1\n",
        "[daemon]\nmax_conns_per_user = +12\n", "[daemon]\nsocket_mode = -0\n",
        "[daemon]\nsocket_mode = +660\n",       "[daemon]\nsocket_mode = 0x1ff\n",
        "[sched]\ngrace = 1e1000\n",            "[sched]\nmargin_mib = 0x200\n",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&err, 0, sizeof err);
        if (load(bad[k], &c, &err) == 0)
            fail_msg("accepted: %s", bad[k]);
        assert_non_null(strstr(err.msg, ":2: "));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_are_decimal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
