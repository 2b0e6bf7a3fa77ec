/* A write that fails once (LD_PRELOAD): with CARMA_FAKE_WRITE_ERRNO=N set, the process's
 * first write() through the symbol fails with errno N (5: EIO, a disk's passing fault)
 * and later ones succeed, each then setting errno to ENOTTY, as a successful call may.
 * stdio writes through the C library's own entry, not this one: what reaches it is
 * carma's own write() calls, such as cli_outfile's, whose message must name the failed
 * write's errno, not what errno holds by the time the page is done. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

typedef ssize_t (*write_fn)(int, const void *, size_t);

ssize_t write(int fd, const void *buf, size_t n)
{
    static int failed;
    const char *v = getenv("CARMA_FAKE_WRITE_ERRNO");
    if (v && atoi(v) > 0 && !failed++) {
        errno = atoi(v);
        return -1;
    }
    write_fn real = (write_fn)dlsym(RTLD_NEXT, "write");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    ssize_t w = real(fd, buf, n);
    if (w >= 0 && v && atoi(v) > 0)
        errno = ENOTTY;
    return w;
}
