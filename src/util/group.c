#include "util/group.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>

/* The largest buffer offered to the C library before the lookup is given up. */
#define GROUP_BUF_MAX ((size_t)16 << 20)

/* One lookup, by name when name is set, else by gid, into *out (name or gid), with the
 * buffer grown on ERANGE; the errno classified as carma_group_gid says. */
static int group_lookup(const char *name, gid_t gid, gid_t *gid_out, char *name_out, size_t cap)
{
    struct group gr, *g = NULL;
    size_t len = 4096;
    char *buf = NULL;
    int e;
    for (;;) {
        char *nb = realloc(buf, len);
        if (!nb) {
            free(buf);
            return -ENOMEM;
        }
        buf = nb;
        g = NULL;
        e = name ? getgrnam_r(name, &gr, buf, len, &g) : getgrgid_r(gid, &gr, buf, len, &g);
        if (e != ERANGE)
            break;
        if (len >= GROUP_BUF_MAX) {
            e = ENOMEM;
            break;
        }
        len *= 2;
    }
    int rc;
    if (e == 0 && g) {
        rc = 0;
        if (gid_out)
            *gid_out = g->gr_gid;
        if (name_out)
            snprintf(name_out, cap, "%s", g->gr_name);
    } else if (e == 0 || e == ENOENT || e == ESRCH || e == EBADF || e == EPERM) {
        rc = -ENOENT;
    } else {
        rc = -e;
    }
    free(buf);
    return rc;
}

int carma_group_gid(const char *name, gid_t *gid)
{
    return group_lookup(name, 0, gid, NULL, 0);
}

int carma_group_name(gid_t gid, char *name, size_t cap)
{
    if (cap)
        name[0] = '\0';
    return group_lookup(NULL, gid, NULL, name, cap);
}
