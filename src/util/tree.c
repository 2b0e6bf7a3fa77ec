#include "util/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tree_walk {
    uint32_t *budget;
    int exhausted; /* the budget ran out: the walk stops */
    int code;      /* the first failure, 0 none */
    struct carma_err *err;
    const char *what;
    char rel[512]; /* the entry's path below dirfd, for messages only */
    size_t len;
};

static void walk_fail(struct tree_walk *w, int code, const char *problem)
{
    if (w->code)
        return;
    w->code = code;
    carma_err_set(w->err, code, "%s%s: %s", w->what, w->rel, problem);
}

/* Appends "/name" (quoted: a name is the tree's content, untrusted) to w->rel; the
 * length before, to restore. */
static size_t walk_push(struct tree_walk *w, const char *name)
{
    size_t was = w->len;
    int n = snprintf(w->rel + w->len, sizeof w->rel - w->len, "/%s", carma_quote(name, 40).s);
    if (n > 0)
        w->len = w->len + (size_t)n < sizeof w->rel ? w->len + (size_t)n : sizeof w->rel - 1;
    return was;
}

static void walk_pop(struct tree_walk *w, size_t was)
{
    w->len = was;
    w->rel[was] = '\0';
}

/* Removes entry name of folder pfd (on device dev), a folder with what it holds when
 * levels > 0. type: its d_type, DT_UNKNOWN when not known. */
static void entry_remove(struct tree_walk *w, int pfd, const char *name, unsigned levels, dev_t dev,
                         unsigned char type)
{
    if (*w->budget == 0) {
        w->exhausted = 1;
        return;
    }
    (*w->budget)--;
    size_t was = walk_push(w, name);
    if (type != DT_DIR) {
        /* a file, a symbolic link (removed as one), a socket...: unlinked; a folder
         * answers EISDIR (Linux) or EPERM (POSIX) */
        if (unlinkat(pfd, name, 0) == 0 || errno == ENOENT)
            goto out;
        int e = errno;
        struct stat st;
        if ((e != EISDIR && e != EPERM) || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISDIR(st.st_mode)) {
            walk_fail(w, -e, strerror(e));
            goto out;
        }
    }
    if (levels == 0) {
        /* deeper than the caller goes: only an empty one is removed */
        if (unlinkat(pfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            walk_fail(w, -ENOTEMPTY, "a folder deeper than expected, not entered; left");
        goto out;
    }
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            goto out;
        if ((e == ENOTDIR || e == ELOOP) && (unlinkat(pfd, name, 0) == 0 || errno == ENOENT))
            goto out; /* replaced by a link or a file meanwhile: that is removed */
        walk_fail(w, -e, strerror(e));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        walk_fail(w, -e, strerror(e));
        goto out;
    }
    if (st.st_dev != dev) {
        close(fd);
        walk_fail(w, -EXDEV, "a mount point (another file system), not entered; left");
        goto out;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        walk_fail(w, -e, strerror(e));
        goto out;
    }
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(dir);
        if (!de) {
            int e = errno;
            if (e)
                walk_fail(w, -e, strerror(e));
            break;
        }
        const char *c = de->d_name;
        if (c[0] == '.' && (c[1] == '\0' || (c[1] == '.' && c[2] == '\0')))
            continue;
        entry_remove(w, dirfd(dir), c, levels - 1, st.st_dev, de->d_type);
        if (w->exhausted)
            break;
    }
    closedir(dir);
    if (w->exhausted)
        goto out;
    if (unlinkat(pfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
        int e = errno;
        walk_fail(w, -e, strerror(e)); /* after a failure inside: that one is said */
    }
out:
    walk_pop(w, was);
}

int carma_tree_remove_at(int dirfd, const char *name, const char *what, unsigned depth,
                         uint32_t *budget, struct carma_err *err)
{
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return carma_err_set(err, -EINVAL, "%s: '%s': not one entry's name", what,
                             carma_quote(name, 40).s);
    struct stat st;
    if (fstat(dirfd, &st) < 0) {
        int e = errno;
        return carma_err_set(err, -e, "%s: %s", what, strerror(e));
    }
    struct tree_walk w = {.budget = budget, .err = err, .what = what};
    entry_remove(&w, dirfd, name, depth, st.st_dev, DT_UNKNOWN);
    return w.code ? w.code : w.exhausted ? -EAGAIN : 0;
}
