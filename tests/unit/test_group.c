/* Group lookups (util/group.h): a group found by name and by gid, a name cut to the
 * caller's buffer, and a group that does not exist told as -ENOENT. (A lookup that
 * fails, and one that needs a bigger buffer: tests/e2e/daemon_state.sh, through the
 * LD_PRELOAD shim tests/fake/grfail.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "util/group.h"

static void test_found(void **state)
{
    (void)state;
    gid_t g = 12345;
    assert_int_equal(carma_group_gid("root", &g), 0);
    assert_int_equal(g, 0);
    char name[64];
    assert_int_equal(carma_group_name(0, name, sizeof name), 0);
    assert_string_equal(name, "root");
    char small[3];
    assert_int_equal(carma_group_name(0, small, sizeof small), 0);
    assert_string_equal(small, "ro");
}

static void test_not_found(void **state)
{
    (void)state;
    gid_t g = 12345;
    assert_int_equal(carma_group_gid("carma-no-such-group-x", &g), -ENOENT);
    assert_int_equal(g, 12345);
    char name[64] = "x";
    assert_int_equal(carma_group_name((gid_t)4000000001u, name, sizeof name), -ENOENT);
    assert_string_equal(name, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found),
        cmocka_unit_test(test_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
