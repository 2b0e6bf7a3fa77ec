/* Group lookups (getgrnam_r, getgrgid_r) that tell a group that does not exist from a
 * lookup that failed (an LDAP or SSSD server that does not answer: EIO, ETIMEDOUT), and
 * grow their buffer as the C library asks (ERANGE): a lab's group of many members does
 * not fit in a few KiB, and is no missing group. */
#ifndef CARMA_UTIL_GROUP_H
#define CARMA_UTIL_GROUP_H

#include <stddef.h>
#include <sys/types.h>

/* The gid of group `name` in *gid: 0; -ENOENT when there is no such group (a NULL
 * result, or one of the errors getgrnam_r(3) lists for "not found": ENOENT, ESRCH,
 * EBADF, EPERM); another negative errno when the lookup failed (-ENOMEM: out of memory,
 * or a group over 16 MiB). */
int carma_group_gid(const char *name, gid_t *gid);

/* The name of group gid in name (cap bytes, cut to fit): 0, -ENOENT or another negative
 * errno as carma_group_gid. name is "" unless 0. */
int carma_group_name(gid_t gid, char *name, size_t cap);

#endif
