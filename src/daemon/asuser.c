#include "daemon/asuser.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* setfsuid/setfsgid report no error: the id in force is read back by asking for an
 * invalid one, which changes nothing and returns the current id. */
static uid_t fsuid_now(void)
{
    return (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
}

static gid_t fsgid_now(void)
{
    return (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
}

/* The calling thread's capability sets (capget/capset with pid 0: this thread only). */
static int caps_get(struct __user_cap_data_struct d[2])
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    return (int)syscall(SYS_capget, &h, d);
}

static int caps_set(struct __user_cap_data_struct d[2])
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    return (int)syscall(SYS_capset, &h, d);
}

static void restore(struct carma_asuser *a)
{
    /* the effective capabilities first (CAP_SETGID for setgroups), then the uid: back to
     * root's file-system capabilities, then what needs them. */
    struct __user_cap_data_struct now[2];
    if (a->caps_dropped) {
        struct __user_cap_data_struct d[2];
        if (caps_get(d) == 0) {
            d[0].effective = a->cap_eff[0];
            d[1].effective = a->cap_eff[1];
            caps_set(d);
        }
    }
    syscall(SYS_setfsuid, a->fsuid);
    syscall(SYS_setfsgid, a->fsgid);
    if ((a->groups_set && syscall(SYS_setgroups, (size_t)a->ngroups, a->groups) < 0) ||
        fsuid_now() != a->fsuid || fsgid_now() != a->fsgid ||
        (a->caps_dropped && (caps_get(now) < 0 || now[0].effective != a->cap_eff[0] ||
                             now[1].effective != a->cap_eff[1]))) {
        fprintf(stderr, "carmad: cannot restore its own file-system rights: %s\n", strerror(errno));
        abort();
    }
}

int carma_asuser_enter(struct carma_asuser *a, uid_t uid, gid_t gid, const char *user,
                       struct carma_err *err)
{
    memset(a, 0, sizeof *a);
    a->fsuid = fsuid_now();
    a->fsgid = fsgid_now();
    /* before the fsuid changes, which drops the file-system capabilities from them */
    struct __user_cap_data_struct caps[2];
    if (caps_get(caps) < 0)
        return carma_err_set(err, -errno, "capget: %s", strerror(errno));
    a->cap_eff[0] = caps[0].effective;
    a->cap_eff[1] = caps[1].effective;
    int n = (int)syscall(SYS_getgroups, 0, NULL);
    if (n < 0)
        return carma_err_set(err, -errno, "getgroups: %s", strerror(errno));
    a->groups = malloc(((size_t)n + 1) * sizeof *a->groups);
    if (!a->groups)
        return carma_err_set(err, -ENOMEM, "out of memory");
    a->ngroups = (int)syscall(SYS_getgroups, n, a->groups);
    if (a->ngroups < 0) {
        int e = errno;
        free(a->groups);
        a->groups = NULL;
        return carma_err_set(err, -e, "getgroups: %s", strerror(e));
    }
    int cap = 64, ng;
    gid_t *list = NULL;
    for (;;) {
        gid_t *more = realloc(list, (size_t)cap * sizeof *list);
        if (!more) {
            free(list);
            free(a->groups);
            a->groups = NULL;
            return carma_err_set(err, -ENOMEM, "out of memory");
        }
        list = more;
        ng = cap;
        if (getgrouplist(user, gid, list, &ng) >= 0)
            break;
        if (ng <= cap || cap >= 65536) { /* not a size problem: the user's gid alone */
            list[0] = gid;
            ng = 1;
            break;
        }
        cap = ng;
    }
    a->active = 1;
    /* setgroups is refused where the thread may not change groups (a user namespace
     * whose setgroups is "deny": a rootless container); then there is nothing to
     * give back but the ids, which were not changed either. */
    int e = 0;
    if (syscall(SYS_setgroups, (size_t)ng, list) < 0) {
        e = errno;
    } else {
        a->groups_set = 1;
        /* gid first: once the uid is not 0 the thread may no longer change it. */
        syscall(SYS_setfsgid, gid);
        syscall(SYS_setfsuid, uid);
        if (fsuid_now() != uid || fsgid_now() != gid)
            e = EPERM; /* an id this namespace does not map, or no CAP_SETUID */
        /* None of root's capabilities either: a user has none. CAP_SYS_PTRACE, which
         * setfsuid leaves, follows /proc/PID/cwd, /root and /fd/N of anyone's process,
         * past folders the user cannot enter (the user's own lookup is refused there). */
        caps[0].effective = caps[1].effective = 0;
        if (!e && caps_set(caps) < 0)
            e = errno;
        else if (!e)
            a->caps_dropped = 1;
    }
    free(list);
    if (e) {
        carma_asuser_leave(a);
        return carma_err_set(err, -e, "cannot take on the rights of %s (uid %u): %s", user,
                             (unsigned)uid, strerror(e));
    }
    return 0;
}

void carma_asuser_leave(struct carma_asuser *a)
{
    if (!a->active)
        return;
    restore(a);
    free(a->groups);
    a->groups = NULL;
    a->active = 0;
}
