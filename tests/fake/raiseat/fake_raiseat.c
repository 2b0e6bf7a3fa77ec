/* A signal at a chosen moment (LD_PRELOAD): with CARMA_FAKE_RAISE_SIG=N set, the
 * process's first fchmod() raises signal N before it does its work, as a Ctrl-C that
 * lands just then would. cli_outfile gives its new file the old one's permissions with
 * fchmod, once that file is made: the tests reach the moment a report is half written,
 * which no timing from outside hits reliably. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

typedef int (*fchmod_fn)(int, mode_t);

int fchmod(int fd, mode_t mode)
{
    static int raised;
    const char *v = getenv("CARMA_FAKE_RAISE_SIG");
    if (v && atoi(v) > 0 && !raised++)
        raise(atoi(v));
    fchmod_fn real = (fchmod_fn)dlsym(RTLD_NEXT, "fchmod");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd, mode);
}
