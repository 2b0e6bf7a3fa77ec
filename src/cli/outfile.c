#include "cli/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The new file of the outfile open now, for cli_outfile_abandon in a signal handler: a
 * handler has no other way in (one open at a time in a command). */
static volatile sig_atomic_t open_set;
static char open_tmp[sizeof ((struct cli_outfile *)0)->tmp];
/* What the fatal signals' handler does first (cli_fatal_signals_catch). */
static void (*signal_first)(void);

/* Holds off the fatal signals (cli_fatal_signals_catch's) while the new file and its
 * registration in open_tmp/open_set change together: a signal between the open() and
 * the registration would leave the file behind, one between the rename and the
 * unregistration would unlink a name no longer ours. The call is also a compiler
 * barrier: open_tmp is written before open_set and before the signals come back. The
 * commands writing an outfile (carma sim, carma report) are single-threaded, so the
 * process's mask is the thread's. *old: the mask to give back to signals_restore. */
static void signals_hold(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void signals_restore(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

/* f's writes: each write()'s errno kept (the first that failed), for the message, as
 * errno itself may change before the caller looks (a later write that succeeds). */
static ssize_t outfile_write(void *c, const char *buf, size_t n)
{
    struct cli_outfile *o = c;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(o->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!o->werr)
                o->werr = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    return (ssize_t)done; /* short: the stream's error */
}

static int outfile_closefd(void *c)
{
    struct cli_outfile *o = c;
    int rc = close(o->fd);
    o->fd = -1;
    return rc;
}

/* o->f over o->fd (closed when that fails): 0 or a negative errno. */
static int stream_open(struct cli_outfile *o)
{
    o->werr = 0;
    cookie_io_functions_t io = {.write = outfile_write, .close = outfile_closefd};
    o->f = fopencookie(o, "w", io);
    if (o->f)
        return 0;
    int e = errno;
    close(o->fd);
    o->fd = -1;
    return -e;
}

static int in_place(struct cli_outfile *o, const char *path)
{
    o->tmp[0] = '\0';
    o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    return o->fd < 0 ? -errno : stream_open(o);
}

/* Whether the new file (fd) lacks an extended attribute of the old one (path), or has it
 * with another value: an ACL of its own, a user's attribute. An attribute the file system
 * gives every file alike (NFSv4's ACL made from the mode) or a folder's default ACL gives
 * both is no loss; an SELinux label is the folder's default either way. 1 also when they
 * cannot all be read. */
static int xattrs_lost(const char *path, int fd)
{
    char names[4096], a[4096], b[4096];
    ssize_t n = listxattr(path, names, sizeof names);
    if (n < 0)
        return errno == ERANGE; /* more than fit: some (else the file system keeps none) */
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
        const char *name = names + i;
        if (strcmp(name, "security.selinux") == 0)
            continue;
        ssize_t x = getxattr(path, name, a, sizeof a), y = fgetxattr(fd, name, b, sizeof b);
        if (x < 0 || y != x || memcmp(a, b, (size_t)x) != 0)
            return 1;
    }
    return 0;
}

/* The new file's name, attempt k: ".NAME.PID-K.tmp" beside the target, NAME cut (at a
 * UTF-8 character's start) so that the whole fits NAME_MAX. 0, or -1 when it does not
 * fit o->tmp. */
static int tmp_name(struct cli_outfile *o, int k)
{
    const char *slash = strrchr(o->final, '/');
    int dn = slash ? (int)(slash - o->final) + 1 : 0;
    const char *base = o->final + dn;
    char tail[48];
    int tl = snprintf(tail, sizeof tail, ".%ld-%d.tmp", (long)getpid(), k);
    size_t bl = strlen(base), room = NAME_MAX - 1 - (size_t)tl; /* 1: the leading dot */
    if (bl > room) {
        bl = room;
        while (bl > 0 && ((unsigned char)base[bl] & 0xC0) == 0x80)
            bl--;
    }
    int n = snprintf(o->tmp, sizeof o->tmp, "%.*s.%.*s%s", dn, o->final, (int)bl, base, tail);
    return n < 0 || n >= (int)sizeof o->tmp ? -1 : 0;
}

/* Drops the new file made so far (its descriptor, if still open, closed). */
static void tmp_drop(struct cli_outfile *o)
{
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    sigset_t old;
    signals_hold(&old);
    unlink(o->tmp);
    open_set = 0;
    signals_restore(&old);
    o->tmp[0] = '\0';
}

int cli_outfile_open(struct cli_outfile *o, const char *path)
{
    o->f = NULL;
    o->fd = -1;
    o->werr = 0;
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
        /* a new file in its place would split its links */
        if (st.st_nlink > 1)
            return in_place(o, path);
    } else if (snprintf(o->final, sizeof o->final, "%s", path) >= (int)sizeof o->final) {
        return in_place(o, path);
    } else {
        struct stat lst;
        if (lstat(path, &lst) == 0) /* a link that leads nowhere yet */
            return in_place(o, path);
    }
    for (int k = 0; o->fd < 0 && k < 100; k++) {
        if (tmp_name(o, k))
            return in_place(o, path);
        /* no more open to others than the old file from the start: a reader who opened
         * it before the fchmod below would keep reading what follows (a private page) */
        sigset_t old;
        signals_hold(&old);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                     exists ? st.st_mode & 0777 : 0666);
        int e = errno;
        if (o->fd >= 0) { /* ours now: a fatal signal removes it */
            memcpy(open_tmp, o->tmp, strlen(o->tmp) + 1);
            open_set = 1;
        }
        signals_restore(&old);
        if (o->fd < 0 && e != EEXIST) {
            /* the folder (the file alone may be writable), a file system's shorter names */
            if (e == EACCES || e == EPERM || e == EROFS || e == ENAMETOOLONG)
                return in_place(o, path);
            o->tmp[0] = '\0';
            return -e;
        }
    }
    if (o->fd < 0) {
        o->tmp[0] = '\0';
        return -EEXIST;
    }
    if (exists) {
        /* the old file's owner and group (root writing a user's file; a folder's group),
         * then its permissions (a chown clears set-id bits); where the owner cannot be
         * kept, the file is written in place rather than taken from its owner */
        struct stat nst;
        if (fstat(o->fd, &nst) != 0 || ((nst.st_uid != st.st_uid || nst.st_gid != st.st_gid) &&
                                        fchown(o->fd, st.st_uid, st.st_gid) != 0)) {
            tmp_drop(o);
            return in_place(o, path);
        }
        (void)!fchmod(o->fd, st.st_mode & 07777);
        /* the same attributes, or it is written in place: renaming would drop an ACL */
        if (xattrs_lost(o->final, o->fd)) {
            tmp_drop(o);
            return in_place(o, path);
        }
    }
    int rc = stream_open(o);
    if (rc)
        tmp_drop(o); /* (stream_open closed the descriptor) */
    return rc;
}

int cli_outfile_close(struct cli_outfile *o, int failed, char *msg, size_t cap)
{
    int rc = 0;
    errno = 0;
    if (fclose(o->f) != 0 && !failed) {
        if (o->werr)
            snprintf(msg, cap, "write failed: %s", strerror(o->werr));
        else
            snprintf(msg, cap, "%s", errno ? strerror(errno) : "write failed");
        rc = -1;
    } else if (failed && o->werr) {
        snprintf(msg, cap, "write failed: %s", strerror(o->werr));
    }
    o->f = NULL;
    sigset_t old;
    signals_hold(&old);
    if (!failed && !rc && o->tmp[0] && rename(o->tmp, o->final) != 0) {
        snprintf(msg, cap, "renaming %s: %s", o->tmp, strerror(errno));
        rc = -1;
    }
    if ((failed || rc) && o->tmp[0])
        unlink(o->tmp); /* the old file, if any, stays as it was */
    open_set = 0;
    signals_restore(&old);
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
