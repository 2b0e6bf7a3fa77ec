/* Removing a folder tree without trusting what is in it. */
#ifndef CARMA_UTIL_TREE_H
#define CARMA_UTIL_TREE_H

#include <stdint.h>

#include "util/err.h"

/* Removes entry `name` (one path component: no '/') of the folder open as dirfd and,
 * when it is a folder, everything in it, down to `depth` levels of folders (1: the
 * folder and the files in it; deeper folders are not entered and left, an error).
 * Nothing is followed: a symbolic link anywhere in the tree is removed as a link and
 * what it names is untouched; folders are opened with O_NOFOLLOW relative to their
 * parent's descriptor, never by path, so that a rename or a link planted while it runs
 * cannot take it out of the tree; a folder on another file system (a mount point) is
 * not entered. Every entry looked at (removed or not) costs one of *budget, which is
 * decreased; when it runs out, the walk stops.
 * Returns 0 when name is gone (absent already included); -EAGAIN when *budget ran out
 * first and nothing failed (call again: what is gone stays gone); else the first
 * failure's negative errno, with err naming the entry (relative to dirfd, under the
 * label `what`) and the problem, after removing what else could be within the budget.
 * A call never holds more than `depth` descriptors open at once. */
int carma_tree_remove_at(int dirfd, const char *name, const char *what, unsigned depth,
                         uint32_t *budget, struct carma_err *err);

#endif
