#include "cli/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The new file of the outfile open now, for cli_outfile_abandon in a signal handler: a
 * handler has no other way in (one open at a time in a command). */
static volatile sig_atomic_t open_set;
static char open_tmp[sizeof ((struct cli_outfile *)0)->tmp];
/* What the fatal signals' handler does first (cli_fatal_signals_catch). */
static void (*signal_first)(void);

static int in_place(struct cli_outfile *o, const char *path)
{
    o->tmp[0] = '\0';
    o->f = fopen(path, "w");
    return o->f ? 0 : -errno;
}

int cli_outfile_open(struct cli_outfile *o, const char *path)
{
    o->f = NULL;
    o->tmp[0] = '\0';
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return in_place(o, path);
    if (exists) {
        char *real = realpath(path, NULL); /* a link: replace its target, not the link */
        if (!real || strlen(real) >= sizeof o->final) {
            free(real);
            return in_place(o, path);
        }
        strcpy(o->final, real);
        free(real);
    } else if (snprintf(o->final, sizeof o->final, "%s", path) >= (int)sizeof o->final) {
        return in_place(o, path);
    } else {
        struct stat lst;
        if (lstat(path, &lst) == 0) /* a link that leads nowhere yet */
            return in_place(o, path);
    }
    const char *slash = strrchr(o->final, '/');
    int dn = slash ? (int)(slash - o->final) + 1 : 0;
    int fd = -1;
    for (int k = 0; fd < 0 && k < 100; k++) {
        if (snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.%ld-%d.tmp", dn, o->final, o->final + dn,
                     (long)getpid(), k) >= (int)sizeof o->tmp)
            return in_place(o, path);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) { /* ours now: a fatal signal removes it */
            memcpy(open_tmp, o->tmp, strlen(o->tmp) + 1);
            open_set = 1;
        } else if (errno != EEXIST) {
            if (errno == EACCES || errno == EPERM || errno == EROFS)
                return in_place(o, path); /* the folder: the file alone may be writable */
            int e = errno;
            o->tmp[0] = '\0';
            return -e;
        }
    }
    if (fd < 0) {
        o->tmp[0] = '\0';
        return -EEXIST;
    }
    if (exists)
        (void)!fchmod(fd, st.st_mode & 07777); /* the old file's permissions */
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        open_set = 0;
        o->tmp[0] = '\0';
        return -e;
    }
    return 0;
}

int cli_outfile_close(struct cli_outfile *o, int failed, char *msg, size_t cap)
{
    int rc = 0;
    if (fclose(o->f) != 0 && !failed) {
        snprintf(msg, cap, "%s", strerror(errno));
        rc = -1;
    }
    o->f = NULL;
    if (!failed && !rc && o->tmp[0] && rename(o->tmp, o->final) != 0) {
        snprintf(msg, cap, "renaming %s: %s", o->tmp, strerror(errno));
        rc = -1;
    }
    if ((failed || rc) && o->tmp[0])
        unlink(o->tmp); /* the old file, if any, stays as it was */
    open_set = 0;
    return failed ? -1 : rc;
}

void cli_outfile_abandon(void)
{
    if (open_set)
        unlink(open_tmp);
}

static void on_fatal_signal(int sig)
{
    if (signal_first)
        signal_first();
    cli_outfile_abandon();
    /* SA_RESETHAND restored the default action: the signal, blocked until this returns,
     * then ends the process as the shell expects (status 128 + sig). */
    raise(sig);
}

void cli_fatal_signals_catch(void (*first)(void))
{
    signal_first = first;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa = {.sa_handler = on_fatal_signal, .sa_flags = SA_RESETHAND};
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}
