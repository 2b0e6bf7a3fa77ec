/* A group database that fails as a directory server can (LD_PRELOAD): getgrnam_r and
 * getgrgid_r answer, for the calls the variables pick, with
 *   CARMA_FAKE_GR_ERRNO=N    error N (5: EIO, an LDAP server that does not answer), no
 *                            group; unset or 0: the C library's answer
 *   CARMA_FAKE_GR_MIN_BUF=N  ERANGE while the caller's buffer is under N bytes (a group
 *                            of many members), then the C library's answer
 * so that the tests reach what carma and carmad say when a lookup fails rather than
 * finds nothing, and that they grow their buffer for a big group. */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <stdlib.h>

typedef int (*byname_fn)(const char *, struct group *, char *, size_t, struct group **);
typedef int (*bygid_fn)(gid_t, struct group *, char *, size_t, struct group **);

/* The forced answer for a buffer of buflen bytes: 0 when the C library is to answer. */
static int forced(size_t buflen)
{
    const char *v = getenv("CARMA_FAKE_GR_ERRNO");
    int e = v ? atoi(v) : 0;
    if (e > 0)
        return e;
    v = getenv("CARMA_FAKE_GR_MIN_BUF");
    long min = v ? atol(v) : 0;
    return min > 0 && buflen < (size_t)min ? ERANGE : 0;
}

int getgrnam_r(const char *name, struct group *grp, char *buf, size_t buflen, struct group **result)
{
    int e = forced(buflen);
    if (e) {
        *result = NULL;
        return e;
    }
    byname_fn real = (byname_fn)dlsym(RTLD_NEXT, "getgrnam_r");
    if (!real) {
        *result = NULL;
        return ENOSYS;
    }
    return real(name, grp, buf, buflen, result);
}

int getgrgid_r(gid_t gid, struct group *grp, char *buf, size_t buflen, struct group **result)
{
    int e = forced(buflen);
    if (e) {
        *result = NULL;
        return e;
    }
    bygid_fn real = (bygid_fn)dlsym(RTLD_NEXT, "getgrgid_r");
    if (!real) {
        *result = NULL;
        return ENOSYS;
    }
    return real(gid, grp, buf, buflen, result);
}
