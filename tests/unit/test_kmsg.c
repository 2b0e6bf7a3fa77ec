/* The kernel's log as Xid blame (daemon/kmsg.h): the NVRM Xid lines real drivers
 * print, what is not one, NVML's bus ids, the pid table and the verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "daemon/kmsg.h"

static int parse(const char *rec, struct carmad_kmsg_xid *x)
{
    memset(x, 0x55, sizeof *x);
    return carmad_kmsg_parse(rec, strlen(rec), x);
}

static void test_real_lines(void **state)
{
    (void)state;
    struct carmad_kmsg_xid x;
    /* an H200, driver 580.159.04: the MPS client that wrote through an unmapped address */
    assert_int_equal(
        parse("3,1042,8123456789,-;NVRM: Xid (PCI:0000:00:06): 31, pid=705, name=python3, "
              "channel 0x0000000e, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC6 "
              "GPCCLIENT_T1_15 faulted @ 0x0_00000000. Fault is of type FAULT_PDE "
              "ACCESS_TYPE_VIRT_WRITE\n",
              &x),
        1);
    assert_int_equal(x.domain, 0);
    assert_int_equal(x.bus, 0);
    assert_int_equal(x.device, 6);
    assert_int_equal(x.xid, 31);
    assert_int_equal(x.pid, 705);
    /* a GPU fallen off the bus: no process */
    assert_int_equal(parse("3,7,100,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                           "name=<unknown>, GPU has fallen off the bus.\n",
                           &x),
                     1);
    assert_int_equal(x.bus, 0x3b);
    assert_int_equal(x.device, 0);
    assert_int_equal(x.xid, 79);
    assert_int_equal(x.pid, 0);
    assert_int_equal(parse("4,8,101,-;NVRM: Xid (PCI:0000:3B:1f): 13, pid=<unknown>, x\n", &x), 1);
    assert_int_equal(x.pid, 0);
    assert_int_equal(x.device, 0x1f);
    /* old drivers: no "PCI:", no pid */
    assert_int_equal(parse("4,9,102,-;NVRM: Xid (0000:3b:00): 13, Graphics Exception: ESR "
                           "0x404600=0x80000001\n",
                           &x),
                     1);
    assert_int_equal(x.bus, 0x3b);
    assert_int_equal(x.xid, 13);
    assert_int_equal(x.pid, 0);
    /* an 8-digit domain; a record with further prefix fields and continuation lines; a
     * line that ends at the Xid */
    assert_int_equal(parse("6,10,103,c,caller=T42;NVRM: Xid (PCI:00010000:c1:02): 43, "
                           "pid=4194304, name=x\n SUBSYSTEM=pci\n DEVICE=+pci:0000:c1:02.0\n",
                           &x),
                     1);
    assert_int_equal(x.domain, 0x10000);
    assert_int_equal(x.bus, 0xc1);
    assert_int_equal(x.device, 2);
    assert_int_equal(x.pid, 4194304);
    assert_int_equal(parse("0,1,2,-;NVRM: Xid (PCI:0000:00:06): 94", &x), 1);
    assert_int_equal(x.xid, 94);
    assert_int_equal(x.pid, 0);
    /* a pid that is no pid: the Xid stands, no process named */
    assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:00:06): 31, pid=12ab, name=y\n", &x), 1);
    assert_int_equal(x.pid, 0);
    assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:00:06): 31, pid=0, name=y\n", &x), 1);
    assert_int_equal(x.pid, 0);
    assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:00:06): 31, pid=4194305\n", &x), 1);
    assert_int_equal(x.pid, 0);
}

static void test_not_xid_records(void **state)
{
    (void)state;
    struct carmad_kmsg_xid x;
    const char *no[] = {
        "",
        "NVRM: Xid (PCI:0000:00:06): 31, pid=705, name=python3\n", /* no prefix */
        /* a user's write to /dev/kmsg: facility 1 (user) */
        "12,5,100,-;NVRM: Xid (PCI:0000:00:06): 31, pid=684, name=python3\n",
        "14,5,100,-;NVRM: Xid (PCI:0000:00:06): 31, pid=684\n",
        "3,5,100,-;NVRM: GPU at PCI:0000:00:06: GPU-aaaa\n",
        "3,5,100,-;NVRM: Xid (PCI:0000:00:06) 31, pid=1\n",   /* no colon */
        "3,5,100,-;NVRM: Xid (PCI:0000:00:06): x31, pid=1\n", /* no number */
        "3,5,100,-;NVRM: Xid (PCI:0000:00:06): 31 pid=1\n",   /* no comma */
        "3,5,100,-;NVRM: Xid (PCI:000:00:06): 31, pid=1\n",   /* 3-digit domain */
        "3,5,100,-;NVRM: Xid (PCI:000000000:00:06): 31\n",    /* 9-digit domain */
        "3,5,100,-;NVRM: Xid (PCI:0000:0:06): 31\n",
        "3,5,100,-;NVRM: Xid (PCI:0000:00:20): 31\n", /* device past 31 */
        "3,5,100,-;NVRM: Xid (PCI:0000:00:06): 99999999999, pid=1\n",
        "3,5,100,-; NVRM: Xid (PCI:0000:00:06): 31\n",
        "3,5,100,x;NVRM: Xid (PCI:0000:00:06): 31\n", /* flag */
        "3,5,100;NVRM: Xid (PCI:0000:00:06): 31\n",   /* no flags */
        "3,5,-;NVRM: Xid (PCI:0000:00:06): 31\n",     /* no timestamp */
        "3,,100,-;NVRM: Xid (PCI:0000:00:06): 31\n",
        "a,5,100,-;NVRM: Xid (PCI:0000:00:06): 31\n",
        "3,5,100,-,caller=T1\nNVRM: Xid (PCI:0000:00:06): 31\n",
        /* a continuation line that does not start with a space, or does not end */
        "3,5,100,-;NVRM: Xid (PCI:0000:00:06): 31\nSUBSYSTEM=pci\n",
        "3,5,100,-;NVRM: Xid (PCI:0000:00:06): 31\n SUBSYSTEM=pci",
        "99999999999,5,100,-;NVRM: Xid (PCI:0000:00:06): 31\n",
    };
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
        if (parse(no[k], &x))
            fail_msg("taken for an Xid record: %s", no[k]);
    /* a NUL inside, and bytes past len not read */
    const char nul[] = "3,5,100,-;NVRM: Xid (PCI:0000:00:06): 31\0, pid=1\n";
    assert_int_equal(carmad_kmsg_parse(nul, sizeof nul - 1, &x), 0);
    const char *r = "3,5,100,-;NVRM: Xid (PCI:0000:00:06): 31, pid=705\n";
    assert_int_equal(carmad_kmsg_parse(r, strlen(r) - 3, &x), 1); /* "pid=7": cut there */
    assert_int_equal(x.pid, 7);
    assert_int_equal(carmad_kmsg_parse(r, 12, &x), 0);
    assert_int_equal(carmad_kmsg_parse(NULL, 0, &x), 0);
}

static void test_pci_parse(void **state)
{
    (void)state;
    uint32_t d, b, v;
    assert_int_equal(carmad_kmsg_pci_parse("00000000:00:06.0", &d, &b, &v), 0);
    assert_true(d == 0 && b == 0 && v == 6);
    assert_int_equal(carmad_kmsg_pci_parse("0000:3B:1F.7", &d, &b, &v), 0);
    assert_true(d == 0 && b == 0x3b && v == 0x1f);
    assert_int_equal(carmad_kmsg_pci_parse("00010000:c1:02.0", &d, &b, &v), 0);
    assert_true(d == 0x10000 && b == 0xc1 && v == 2);
    const char *no[] = {"",           "0000:3b:00",      "0000:3b:00.0 ", "000:3b:00.0",
                        "0000:3b:20.0", "0000:3b:00.8", "0000-3b:00.0",  "????:3b:00.0"};
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
        assert_int_equal(carmad_kmsg_pci_parse(no[k], &d, &b, &v), -EINVAL);
}

static void test_pids(void **state)
{
    (void)state;
    static struct carmad_kmsg_pids t;
    memset(&t, 0, sizeof t);
    uint64_t job = 99;
    assert_int_equal(carmad_kmsg_pids_find(&t, 705, 10, 60, &job), 0);
    carmad_kmsg_pids_note(&t, 705, 12, 10);
    carmad_kmsg_pids_note(&t, 684, 14, 10);
    carmad_kmsg_pids_note(&t, 723, 0, 10); /* the MPS server: no job's */
    assert_int_equal(carmad_kmsg_pids_find(&t, 705, 20, 60, &job), 1);
    assert_int_equal(job, 12);
    assert_int_equal(carmad_kmsg_pids_find(&t, 723, 20, 60, &job), 1);
    assert_int_equal(job, 0);
    /* its process gone, the monitor lists it no one's: it stays the job's */
    carmad_kmsg_pids_note(&t, 705, 0, 15);
    assert_int_equal(carmad_kmsg_pids_find(&t, 705, 20, 60, &job), 1);
    assert_int_equal(job, 12);
    /* too long ago */
    assert_int_equal(carmad_kmsg_pids_find(&t, 705, 71, 60, &job), 0);
    /* the pid handed to another job */
    carmad_kmsg_pids_note(&t, 705, 20, 80);
    assert_int_equal(carmad_kmsg_pids_find(&t, 705, 81, 60, &job), 1);
    assert_int_equal(job, 20);
    /* full: the oldest gives way */
    for (pid_t p = 1000; p < 1000 + CARMAD_KMSG_PIDS; p++)
        carmad_kmsg_pids_note(&t, p, (uint64_t)p, 100 + p);
    assert_int_equal(carmad_kmsg_pids_find(&t, 1000, 1300, 1e9, &job), 1);
    carmad_kmsg_pids_note(&t, 5, 5, 2000);
    assert_int_equal(carmad_kmsg_pids_find(&t, 1000, 2000, 1e9, &job), 0);
    assert_int_equal(carmad_kmsg_pids_find(&t, 5, 2000, 1e9, &job), 1);
    assert_int_equal(carmad_kmsg_pids_find(&t, 1001, 2000, 1e9, &job), 1);
    carmad_kmsg_pids_note(&t, 0, 1, 1);
    carmad_kmsg_pids_note(&t, -3, 1, 1);
    assert_int_equal(carmad_kmsg_pids_find(&t, 0, 2000, 1e9, &job), 0);
}

static void test_judge(void **state)
{
    (void)state;
    struct carmad_kmsg_blames b;
    memset(&b, 0, sizeof b);
    struct carmad_kmsg_blame w;
    assert_int_equal(carmad_kmsg_judge(&b, 12, 0, 100, 60, &w), CARMAD_KMSG_NONE);
    /* Xid 31 put on job 12's process at 50 */
    carmad_kmsg_blame_add(&b, &(struct carmad_kmsg_blame){.t = 50, .xid = 31, .pid = 705, .job = 12});
    assert_int_equal(carmad_kmsg_judge(&b, 12, 0, 51, 60, &w), CARMAD_KMSG_SELF);
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 51, 60, &w), CARMAD_KMSG_OTHER);
    assert_int_equal(w.job, 12);
    assert_int_equal(w.pid, 705);
    assert_int_equal(w.xid, 31);
    /* read right at the co-runner's end, after the end it records */
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 49.5, 60, &w), CARMAD_KMSG_OTHER);
    /* before the attempt started, or too long before its end */
    assert_int_equal(carmad_kmsg_judge(&b, 14, 50.5, 60, 60, &w), CARMAD_KMSG_NONE);
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 111, 60, &w), CARMAD_KMSG_NONE);
    /* not an application Xid: no blame from it */
    carmad_kmsg_blame_add(&b, &(struct carmad_kmsg_blame){.t = 52, .xid = 94, .pid = 684, .job = 14});
    carmad_kmsg_blame_add(&b, &(struct carmad_kmsg_blame){.t = 52, .xid = 999, .pid = 684, .job = 14});
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 53, 60, &w), CARMAD_KMSG_OTHER);
    /* its own process faulted too: its failure is its own */
    carmad_kmsg_blame_add(&b, &(struct carmad_kmsg_blame){.t = 53, .xid = 13, .pid = 684, .job = 14});
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 54, 60, &w), CARMAD_KMSG_SELF);
    /* a process of no carma job: the latest named */
    carmad_kmsg_blame_add(&b, &(struct carmad_kmsg_blame){.t = 55, .xid = 43, .pid = 9, .job = 0});
    assert_int_equal(carmad_kmsg_judge(&b, 20, 0, 56, 60, &w), CARMAD_KMSG_OTHER);
    assert_int_equal(w.job, 0);
    assert_int_equal(w.pid, 9);
    /* Xid 45, preemptive cleanup, is put on the processes the driver tears down after
     * another's fault (or a kill): it makes a victim neither the culprit nor a victim */
    memset(&b, 0, sizeof b);
    carmad_kmsg_blame_add(&b,
                          &(struct carmad_kmsg_blame){.t = 50, .xid = 31, .pid = 705, .job = 12});
    carmad_kmsg_blame_add(&b,
                          &(struct carmad_kmsg_blame){.t = 50, .xid = 45, .pid = 684, .job = 14});
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 51, 60, &w), CARMAD_KMSG_OTHER);
    assert_int_equal(w.job, 12);
    assert_int_equal(w.xid, 31);
    memset(&b, 0, sizeof b);
    carmad_kmsg_blame_add(&b,
                          &(struct carmad_kmsg_blame){.t = 50, .xid = 45, .pid = 705, .job = 12});
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 51, 60, &w), CARMAD_KMSG_NONE);
    assert_int_equal(carmad_kmsg_judge(&b, 12, 0, 51, 60, &w), CARMAD_KMSG_NONE);
    /* Xids the verdict does not read do not push the culprit's out of the ring */
    memset(&b, 0, sizeof b);
    carmad_kmsg_blame_add(&b,
                          &(struct carmad_kmsg_blame){.t = 50, .xid = 31, .pid = 705, .job = 12});
    for (unsigned k = 0; k < 4 * CARMAD_KMSG_BLAMES; k++) {
        uint64_t xid = k % 4 == 0 ? 63 : k % 4 == 1 ? 94 : k % 4 == 2 ? 999 : 45;
        carmad_kmsg_blame_add(&b,
                              &(struct carmad_kmsg_blame){.t = 51, .xid = xid, .pid = 9, .job = 0});
    }
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 52, 60, &w), CARMAD_KMSG_OTHER);
    assert_int_equal(w.job, 12);
    /* the ring keeps the last CARMAD_KMSG_BLAMES */
    for (unsigned k = 0; k < CARMAD_KMSG_BLAMES; k++)
        carmad_kmsg_blame_add(&b,
                              &(struct carmad_kmsg_blame){.t = 60, .xid = 13, .pid = 1, .job = 1});
    assert_int_equal(b.n, CARMAD_KMSG_BLAMES);
    assert_int_equal(carmad_kmsg_judge(&b, 14, 0, 61, 60, &w), CARMAD_KMSG_OTHER);
    assert_int_equal(w.job, 1);
    assert_int_equal(carmad_kmsg_judge(&b, 12, 0, 61, 60, &w), CARMAD_KMSG_OTHER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_lines), cmocka_unit_test(test_not_xid_records),
        cmocka_unit_test(test_pci_parse),  cmocka_unit_test(test_pids),
        cmocka_unit_test(test_judge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
