/* A signal at a chosen moment (LD_PRELOAD): with CARMA_FAKE_RAISE_SIG=N set, signal N is
 * raised once, at the moment CARMA_FAKE_RAISE_AT names, as a Ctrl-C that lands just then
 * would:
 *   fchmod (or unset)  the process's first fchmod(), before it does its work;
 *   open-tmp           just after the first open() of a file whose name ends in ".tmp"
 *                      returns a descriptor (the file made, the caller not told yet).
 * cli_outfile makes its new file ".NAME.PID-K.tmp", then gives it the old one's
 * permissions with fchmod: the tests reach the moment the file is made and the moment a
 * report is half written, which no timing from outside hits reliably. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int (*fchmod_fn)(int, mode_t);
typedef int (*open_fn)(const char *, int, ...);

/* The signal to raise at moment `at` (0: none), once in the process's life. */
static int raise_now(const char *at)
{
    static int raised;
    const char *v = getenv("CARMA_FAKE_RAISE_SIG");
    const char *a = getenv("CARMA_FAKE_RAISE_AT");
    if (!v || atoi(v) <= 0 || strcmp(a && *a ? a : "fchmod", at) != 0 || raised)
        return 0;
    raised = 1;
    return atoi(v);
}

int fchmod(int fd, mode_t mode)
{
    int sig = raise_now("fchmod");
    if (sig)
        raise(sig);
    fchmod_fn real = (fchmod_fn)dlsym(RTLD_NEXT, "fchmod");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd, mode);
}

static int open_as(const char *name, const char *path, int flags, mode_t mode)
{
    open_fn real = (open_fn)dlsym(RTLD_NEXT, name);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int fd = real(path, flags, mode);
    size_t n = strlen(path);
    if (fd >= 0 && n >= 4 && strcmp(path + n - 4, ".tmp") == 0) {
        int e = errno, sig = raise_now("open-tmp");
        if (sig)
            raise(sig);
        errno = e;
    }
    return fd;
}

/* The mode argument is there only with O_CREAT or O_TMPFILE (as open(2) reads it). */
#define MODE_ARG(flags, mode)                                                                      \
    do {                                                                                           \
        if (((flags)&O_CREAT) || ((flags)&O_TMPFILE) == O_TMPFILE) {                               \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = (mode_t)va_arg(ap, unsigned);                                                   \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return open_as("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return open_as("open64", path, flags, mode);
}
