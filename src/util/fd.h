/* Process descriptors. */
#ifndef CARMA_UTIL_FD_H
#define CARMA_UTIL_FD_H

/* Opens /dev/null on each of descriptors 0, 1 and 2 that is closed, so that what the
 * process opens next cannot land on them (to be written by its log, replaced by a dup2,
 * or handed to a job as its output). 0, or -1 when /dev/null cannot be opened. */
int carma_fd_fill_std(void);

#endif
